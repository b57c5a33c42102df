# bench/modifying_handlers.py: CPython's test_signal.StressTest.
# test_stress_modifying_handlers as Debian's 3.11.2 has it (a thread raises
# SIGUSR1 in a loop while the main thread swaps its handler with SIG_IGN,
# 40,000 signal.signal calls a round, until NSENT raises), with counts instead
# of assertions: raises sent, Python handler calls, "ignored due to race
# condition" reports (a raise that reached the C handler and then found
# SIG_IGN at the Python level). The test fails when the last two are both 0.
# NSENT (default 100, the test's). DELAY_NS with RACE_SO (a shared build of
# bench/sigign_race.c): raise through ctypes after spinning DELAY_NS with the
# GIL released, instead of signal.raise_signal.
import ctypes
import os
import signal
import sys
import threading
import time

signum = signal.SIGUSR1
nsent = int(os.environ.get("NSENT", "100"))
delay = os.environ.get("DELAY_NS")
sent = received = ignored = rounds = 0
do_stop = False
if delay is not None:
    lib = ctypes.CDLL(os.environ["RACE_SO"])


def handler(s, f):
    global received
    received += 1


def unraisable(u):
    global ignored
    ignored += 1


def set_interrupts():
    global sent
    while not do_stop:
        if delay is None:
            signal.raise_signal(signum)
        else:
            lib.delayed_raise(signum, int(delay))
        sent += 1


def cycle_handlers():
    global rounds
    while sent < nsent:
        rounds += 1
        for i in range(20000):
            for h in [handler, signal.SIG_IGN]:
                signal.signal(signum, h)


sys.unraisablehook = unraisable
old = signal.signal(signum, handler)
t = threading.Thread(target=set_interrupts)
t0 = time.monotonic()
t.start()
cycle_handlers()
do_stop = True
t.join()
signal.signal(signum, old)
print(f"sent={sent} received={received} ignored_by_race={ignored} rounds={rounds} "
      f"s={time.monotonic() - t0:.2f}", flush=True)
