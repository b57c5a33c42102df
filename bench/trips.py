"""bench/trips.py TRACE COMM: where a trapped call's round trip spends its
time, from `perf script` of sched:sched_switch, sched:sched_wakeup and
raw_syscalls:sys_enter/sys_exit for ioctl (id 16), recorded system-wide
while a workload ran under paddock (bench/trips.sh records it).

COMM is the supervisor's thread name (the paddock binary's name, cut to
15 characters). For every notification the supervisor answered, four
stretches, from the caller's switch-out to sleep to its next switch-in:

  caller sleeps -> receive returns   the notify loop is woken, waits for a
                                     CPU, and its receive returns;
  receive returns -> send            the decision (and any preemption);
  send -> caller woken               the answer's wake-up;
  caller woken -> running            the caller waits for a CPU.

Bare, an exec makes the caller wait for none of them.
"""
import re
import statistics
import sys

SEND = "c0182101"  # SECCOMP_IOCTL_NOTIF_SEND

rx = re.compile(r"^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)$")
swx = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)")
wkx = re.compile(r" pid=(\d+) ")


def main(path, sup):
    slept = {}  # tid -> when it last switched out asleep
    recv = {}  # supervisor tid -> when its last ioctl returned
    sent = {}  # supervisor tid -> (its receive, its send): the next task it wakes is the caller
    answered = {}  # caller tid -> record, until it runs
    done = []
    for line in open(path, errors="replace"):
        m = rx.match(line)
        if not m:
            continue
        comm, tid, _, t, ev, rest = m.groups()
        comm, t = comm.strip(), float(t) * 1e6
        if ev == "sched:sched_switch":
            s = swx.search(rest)
            if not s:
                continue
            _, prev, state, _, nxt = s.groups()
            if state.startswith(("S", "D")):
                slept[prev] = t
            r = answered.get(nxt)
            if r and "woken" in r:
                r["run"] = t
                done.append(answered.pop(nxt))
        elif ev == "raw_syscalls:sys_exit" and comm == sup:
            recv[tid] = t
        elif ev == "raw_syscalls:sys_enter" and comm == sup and SEND in rest and tid in recv:
            sent[tid] = (recv[tid], t)
        elif ev == "sched:sched_wakeup" and comm == sup and tid in sent:
            w = wkx.search(rest)
            if not w or f"comm={sup} " in rest:
                continue
            caller = w.group(1)
            got, send = sent.pop(tid)
            if caller in slept and slept[caller] < got:
                answered[caller] = {"slept": slept[caller], "recv": got, "send": send, "woken": t}
    if not done:
        sys.exit("bench/trips.py: no answered notification of %s in %s" % (sup, path))
    print("| stretch | n | median us | p90 us | p99 us | mean us | sum ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, a, b in [("caller sleeps -> receive returns", "slept", "recv"),
                       ("receive returns -> send", "recv", "send"),
                       ("send -> caller woken", "send", "woken"),
                       ("caller woken -> running", "woken", "run"),
                       ("whole round trip", "slept", "run")]:
        xs = sorted(r[b] - r[a] for r in done)
        print("| %s | %d | %.0f | %.0f | %.0f | %.0f | %.0f |" % (
            name, len(xs), statistics.median(xs), xs[len(xs) * 9 // 10], xs[len(xs) * 99 // 100],
            statistics.mean(xs), sum(xs) / 1000))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: bench/trips.py TRACE COMM")
    main(*sys.argv[1:])
