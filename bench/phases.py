#!/usr/bin/env python3
"""phases.py: splits each supervised kill() of bench/killloop into phases,
from a `perf script -F comm,tid,cpu,time,event,trace` dump of a trace that
recorded raw_syscalls:sys_enter/sys_exit (kill and ioctl), sched:sched_switch
and sched:sched_wakeup system-wide. bench/phases.sh records and calls it.

The raw_syscalls:sys_enter tracepoint fires after seccomp has let a call
through, so a kill's start is taken as the moment the caller blocks (switches
out in state S) waiting for the supervisor's answer. Phases per call:

  wake      caller blocks -> supervisor's notify thread is switched in
  return    switched in -> NOTIF_RECV returns to user space
  decide    NOTIF_RECV returned -> NOTIF_SEND entered (Go code, /proc
            reads, pidfd pin, ID_VALID: everything paddock does)
  answer    NOTIF_SEND entered -> the caller's kill() returns
  total     caller blocks -> kill() returns

and, inside "decide", the time the notify thread spent in each syscall (the
rest of the phase is user-space Go code).
"""
import re
import statistics
import sys
from collections import Counter

RECV = "c0502100"  # SECCOMP_IOCTL_NOTIF_RECV
SEND = "c0182101"  # SECCOMP_IOCTL_NOTIF_SEND
NR_KILL, NR_IOCTL = "62", "16"  # x86_64
NAMES = {0: "read", 3: "close", 16: "ioctl (NOTIF_ID_VALID)", 257: "openat", 434: "pidfd_open",
         424: "pidfd_send_signal", 202: "futex", 35: "nanosleep", 24: "sched_yield",
         281: "epoll_pwait", 4: "stat", 262: "newfstatat", 39: "getpid", 234: "tgkill",
         7: "poll", 271: "ppoll", 9: "mmap", 11: "munmap", 28: "madvise", 14: "rt_sigprocmask", 15: "rt_sigreturn"}

line_re = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$")


def parse(path):
    for line in open(path, errors="replace"):
        m = line_re.match(line)
        if not m:
            continue
        comm, tid, cpu, t, ev, rest = m.groups()
        yield comm, int(tid), int(cpu), float(t) * 1e6, ev, rest


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: phases.py PERF_SCRIPT_DUMP")
    events = list(parse(sys.argv[1]))

    def is_sys(ev, rest, kind, nr):
        return ev == "raw_syscalls:" + kind and rest.startswith("NR %s " % nr)

    # The caller is the killloop thread with the most kill() exits; the notify
    # thread is the paddock thread with the most NOTIF_RECV entries.
    kills = Counter(tid for c, tid, _, _, ev, r in events if c == "killloop" and is_sys(ev, r, "sys_exit", NR_KILL))
    recvs = Counter(tid for c, tid, _, _, ev, r in events
                    if c == "paddock" and is_sys(ev, r, "sys_enter", NR_IOCTL) and RECV in r)
    if not kills or not recvs:
        sys.exit("phases.py: no supervised kill() found in the trace")
    caller, server = kills.most_common(1)[0][0], recvs.most_common(1)[0][0]

    rows = []
    last_block = None  # (time, cpu) the caller last blocked
    last_in = None  # (time, cpu) the notify thread was last switched in
    open_sys = None  # (nr, time, ioctl kind) of the notify thread's syscall in progress
    cur = {}
    prev_exit = 0.0
    same_cpu = 0
    out_at = None  # when the notify thread was switched out, while it is
    for comm, tid, cpu, t, ev, rest in events:
        if ev == "sched:sched_switch":
            if re.search(r"prev_pid=%d\b" % caller, rest) and "prev_state=S" in rest:
                last_block = (t, cpu)
            if re.search(r"next_pid=%d\b" % server, rest):
                last_in = (t, cpu)
                if out_at is not None and "recv" in cur and "send" not in cur:
                    cur["off"] += t - out_at
                out_at = None
            if re.search(r"prev_pid=%d\b" % server, rest):
                out_at = t
            continue
        if tid == server and ev == "raw_syscalls:sys_enter":
            nr = rest.split()[1]
            kind = None
            if nr == NR_IOCTL:
                kind = RECV if RECV in rest else SEND if SEND in rest else "other"
            open_sys = (nr, t, kind)
            if kind == SEND and "recv" in cur:
                cur["send"] = t
            continue
        if tid == server and ev == "raw_syscalls:sys_exit":
            nr = rest.split()[1]
            if not open_sys or open_sys[0] != nr:
                continue
            if open_sys[2] == RECV and rest.endswith("= 0"):
                cur = {}
                if last_block and last_block[0] > prev_exit:
                    # The notify thread may have been running already (it was
                    # preempted, runnable, after its previous answer).
                    switched = last_in is not None and last_in[0] >= last_block[0]
                    cur = {"block": last_block[0], "in": last_in[0] if switched else t, "recv": t, "sys": Counter(), "n": Counter(), "off": 0.0}
                    if switched and last_in[1] == last_block[1]:
                        same_cpu += 1
            elif "recv" in cur and "send" not in cur:
                cur["sys"][int(nr)] += t - open_sys[1]
                cur["n"][int(nr)] += 1
            open_sys = None
            continue
        if tid == caller and is_sys(ev, rest, "sys_exit", NR_KILL):
            if "send" in cur:
                cur["exit"] = t
                rows.append(cur)
            cur = {}
            prev_exit = t

    if not rows:
        sys.exit("phases.py: could not pair any kill() with its notification")
    phases = [
        ("wake", lambda r: r["in"] - r["block"]),
        ("return", lambda r: r["recv"] - r["in"]),
        ("decide", lambda r: r["send"] - r["recv"]),
        ("answer", lambda r: r["exit"] - r["send"]),
        ("total", lambda r: r["exit"] - r["block"]),
    ]
    n = len(rows)
    print("calls paired: %d (notify thread switched in on the caller's CPU: %d)" % (n, same_cpu))
    print()
    print("| phase | p50 us | p90 us | p99 us | mean us |")
    print("|---|---:|---:|---:|---:|")
    for name, f in phases:
        xs = sorted(f(r) for r in rows)
        q = lambda p: xs[min(n - 1, int(n * p))]
        print("| %s | %.1f | %.1f | %.1f | %.1f |" % (name, q(0.5), q(0.9), q(0.99), statistics.fmean(xs)))
    # Inside decide: each syscall's time (off-CPU time while in it counts
    # as the syscall's), the time the thread sat preempted in user space,
    # and the rest, user-space Go code.
    print()
    print("Inside decide, per call (%d calls):" % n)
    print()
    print("| where | calls per kill | p50 us | mean us |")
    print("|---|---:|---:|---:|")
    nrs = Counter()
    for r in rows:
        nrs.update(r["n"])

    def line(label, calls, xs):
        xs = sorted(xs)
        print("| %s | %s | %.1f | %.1f |" % (label, calls, xs[n // 2], statistics.fmean(xs)))

    for nr, c in nrs.most_common():
        line(NAMES.get(nr, "syscall %d" % nr), "%.2f" % (c / n), [r["sys"][nr] for r in rows])
    line("all syscalls", "%.2f" % (sum(nrs.values()) / n), [sum(r["sys"].values()) for r in rows])
    # Off-CPU time inside a syscall is already in that syscall's figure.
    user = [r["send"] - r["recv"] - sum(r["sys"].values()) for r in rows]
    line("user space (Go code, syscall entry/exit, preemption)", "-", user)
    line("of decide: off CPU (preempted or blocked)", "-", [r["off"] for r in rows])
    line("decide total", "-", [r["send"] - r["recv"] for r in rows])

if __name__ == "__main__":
    main()
