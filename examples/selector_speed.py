"""Simulated requests per CPU second of Python selectors against their native twins, side by
side in one process on the c3 setup (50 servers, 150 clients, T = 100 ms, one seed):

    python examples/selector_speed.py [requests]

CPU seconds, not wall time: the machine's other load changes the wall clock, far less the CPU
time a run takes. For scale: absim, C3's own simulator in Python and SimPy, was reported at about
2,500 simulated requests per CPU second on this setup (issue 32; not measured here).
"""

import sys
import time

import tailor
from tailor import ports

REQUESTS = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
PAIRS = [("random", "py-random"), ("lor", "py-lor"), ("p2c-peak-ewma", "py-p2c-peak-ewma")]


def cpu_rate(selector):
    started = time.process_time()
    res = tailor.sim("c3", selectors=[selector], requests=REQUESTS, seeds=[1], progress=False,
                     sweep={"cluster.fluctuation.interval_ms": [100.0]}, set={"workload.warmup_ms": 200.0})
    cpu = time.process_time() - started
    return REQUESTS / cpu, res.runs["p99_ms"].iloc[0]


def main():
    ports.register_all()
    print(f"c3 setup, {REQUESTS} requests per run, simulated requests per CPU second")
    print(f"{'selector':18} {'native':>12} {'python':>12} {'ratio':>7}  same p99")
    for native, port in PAIRS:
        n, n99 = cpu_rate(native)
        p, p99 = cpu_rate(port)
        print(f"{native:18} {n:12,.0f} {p:12,.0f} {n / p:6.1f}x  {n99 == p99}")
    print("absim (C3's Python simulator), as reported: about 2,500")


if __name__ == "__main__":
    main()
