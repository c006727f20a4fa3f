#!/usr/bin/env python3
"""W2 over loopback TCP against `serve --brokers 2` beside `serve` (one broker), in one run
(issue 23's benchmark: report the ratio; the target is "not slower than one broker").

Each run is benchmarks/w2_throughput.py's run_w2: client_sdk on the client side
(RemoteBroker), a `serve` subprocess with a fresh store, 100-byte bodies; produce one
at a time, produce with a window of in-flight sends, consume with ack. With two
brokers each topic has 4 queues on each broker, made beforehand, and the producer and
consumer spread over both. Runs are interleaved (1, 2, 1, 2, ...) so the host's drift
hits both alike. Both brokers live in one server process on this 2-core machine: the
comparison shows what the cluster's routing costs, not a scale-out.

Usage: python benchmarks/cluster_w2.py [--n 30000] [--sync-n 5000] [--window 32] [--runs 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers.bench_host import host_speed  # noqa: E402
from w2_throughput import run_w2  # noqa: E402

PHASES = {"produce_sync": "produce, one at a time", "produce_window": "produce, window (send_async)",
          "consume": "consume with ack (PushConsumer)"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=30000)
    ap.add_argument("--sync-n", type=int, default=5000)
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if a.n < 100 or a.sync_n < 1 or a.window < 1 or a.runs < 1:
        ap.error("--n must be >= 100, --sync-n, --window and --runs >= 1")
    print(f"W2 over loopback TCP, 1 broker vs 2 brokers (one serve process), N={a.n:,} (one at a time: "
          f"{a.sync_n:,}), window {a.window}, {a.runs} run(s) interleaved, median (min-max); python "
          f"{sys.version.split()[0]}; host {host_speed()}")
    rows: dict[int, list[dict]] = {1: [], 2: []}
    for _ in range(a.runs):
        for brokers in (1, 2):
            rows[brokers].append(run_w2(a.n, a.sync_n, a.window, 0, brokers=brokers))
    for phase, label in PHASES.items():
        rates = {b: [r[phase]["msgs_per_s"] for r in rows[b]] for b in rows}
        ratios = [two / one for one, two in zip(rates[1], rates[2])]
        r = statistics.median(ratios)
        print(f"  {label:<34} 1 broker {statistics.median(rates[1]):>7,.0f} msgs/s "
              f"({min(rates[1]):,.0f}-{max(rates[1]):,.0f})   2 brokers {statistics.median(rates[2]):>7,.0f} msgs/s "
              f"({min(rates[2]):,.0f}-{max(rates[2]):,.0f})   2/1 = {r:.2f} ({min(ratios):.2f}-{max(ratios):.2f}); "
              f"{'not slower' if r >= 0.95 else 'SLOWER'} (target: not slower than one broker; "
              f"within 5 % counts as not slower: runs of one setup differ by more)")
        # CPU per message (client + server): the work each setup does, less sensitive to
        # the scheduling noise of a loaded 2-core host than the wall clock
        count = a.sync_n if phase == "produce_sync" else a.n
        cpu = {b: [(r[phase]["client_cpu_s"] + r[phase]["server_cpu_s"]) / count * 1e6 for r in rows[b]]
               for b in rows}
        cpu_ratios = [two / one for one, two in zip(cpu[1], cpu[2])]
        print(f"  {'':<34} CPU per message: 1 broker {statistics.median(cpu[1]):.0f} us, 2 brokers "
              f"{statistics.median(cpu[2]):.0f} us, 2/1 = {statistics.median(cpu_ratios):.2f} "
              f"({min(cpu_ratios):.2f}-{max(cpu_ratios):.2f})")
    print(f"host after the run: {host_speed()}")


if __name__ == "__main__":
    main()
