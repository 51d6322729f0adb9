"""The Python reader against a segment the Go writer made (clients_test.go):
python3 reader_check.py MODULE_DIR PATH STAMP prints one line per call."""
import sys
import time

sys.path.insert(0, sys.argv[1])
import monagent_time  # noqa: E402

path, stamp = sys.argv[2], int(sys.argv[3])


def show(what, f):
    try:
        e, l, st = f()
        print(what, 0, e, l, st)
    except monagent_time.Error as err:
        print(what, err.code)


r = monagent_time.open(path)
print("open", 0)
show("past", lambda: r.past("system", "MONOTONIC_RAW", stamp))
show("pastfar", lambda: r.past("system", "MONOTONIC_RAW", stamp - 200_000_000_000))
show("now", lambda: r.now("system"))
show("pastrt", lambda: r.past("system", "REALTIME", time.time_ns()))
show("global", lambda: r.now("global"))
show("nosuch", lambda: r.now("nosuch"))
for what, f in (("after", r.after), ("before", r.before)):
    try:
        print(what, int(f("system", 0)))
    except monagent_time.Error as err:
        print(what, err.code)
print("clocks", ",".join(r.clocks()))
try:
    n = 20000
    t0 = time.perf_counter_ns()
    for _ in range(n):
        time.clock_gettime_ns(time.CLOCK_REALTIME)
    t1 = time.perf_counter_ns()
    for _ in range(n):
        r.now("system")
    t2 = time.perf_counter_ns()
    print("cost", 0, (t1 - t0) // n, (t2 - t1) // n, "ns")
except monagent_time.Error as err:
    print("cost", err.code)
