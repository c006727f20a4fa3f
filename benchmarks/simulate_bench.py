#!/usr/bin/env python3
"""Simulation speed: 6 virtual hours of 10,000 messages with the W1 failure pattern
(../shared/peer-bench/common.py: i % 100 == 0 poison, i % 10 == 5 fails once) plus a
broker crash and restart, on a store on disk, every invariant checked.

Prints wall time, virtual seconds per wall second and the target (under 1 s of wall
time), next to the same 10,000 W1 messages through the plain SDK and core in memory
(benchmarks/w1_retry.py, run now): the ratio is what the disk store, six hours of
periodic client work, the crash and the invariant checks cost on top.

Usage: python benchmarks/simulate_bench.py [--n 10000] [--runs 3] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from client_sdk.simulation import Simulation, w1_scenario  # noqa: E402


def one_run(n: int, profile: bool = False):
    with tempfile.TemporaryDirectory(prefix="simbench-") as d:
        sim = Simulation(w1_scenario(seed=1, messages=n, duration="6h", crash_at="30m"), Path(d) / "store")
        if profile:
            prof = cProfile.Profile()
            result = prof.runcall(sim.run)
            pstats.Stats(prof).sort_stats("cumtime").print_stats(30)
        else:
            result = sim.run()
    if not result.ok or not result.settled:
        raise SystemExit(f"the run was not clean: settled={result.settled}, "
                         f"violations={[str(v) for v in result.violations[:5]]}")
    return result


def plain_w1(n: int) -> float:
    """msgs/s of the same W1 messages through the same SDK and core with nothing else:
    in-memory store, no invariants, no crash, time jumping straight to each deadline
    (benchmarks/w1_retry.py, run now)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from w1_retry import run_w1
    return run_w1(n)["msgs_per_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.profile:
        one_run(args.n, profile=True)
        return
    results = [one_run(args.n) for _ in range(args.runs)]
    walls = sorted(r.wall_s for r in results)
    r = results[0]
    virtual_s = r.virtual_ms / 1000
    median = statistics.median(walls)
    print(f"simulate: W1 pattern, {args.n:,} messages, 6 h virtual + settle, 1 crash/restart, disk store, "
          f"invariants on ({args.runs} runs)")
    print(f"  deliveries {r.deliveries:,}, send-backs {r.accounts['send_backs']:,}, "
          f"dead-lettered {r.accounts['dead_lettered']:,}, virtual time {virtual_s:,.0f} s")
    print(f"  wall time      min {walls[0]:.2f} s   median {median:.2f} s   max {walls[-1]:.2f} s   "
          f"(target < 1 s: {'met' if median < 1 else 'NOT met'})")
    print(f"  virtual/wall   {virtual_s / median:,.0f} virtual seconds per wall second (median)")
    print(f"  messages/s     {args.n / median:,.0f} (whole run)")
    plain = plain_w1(args.n)
    print(f"  plain W1 through the SDK in memory (benchmarks/w1_retry.py, now): {plain:,.0f} msgs/s "
          f"-> the simulation runs at {args.n / median / plain:.2f} of it")


if __name__ == "__main__":
    main()
