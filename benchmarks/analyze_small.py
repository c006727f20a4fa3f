"""`rocketmq-emulator analyze` of small snapshots beside Spark's own start-up, in one run.

    .venv/bin/python benchmarks/analyze_small.py [--messages 3000,60000] [--runs 3]

Each size is simulated (`simulate --pattern w1`: retries, dead letters) and snapshotted
once. Then, interleaved per run, two child processes: one only starts Spark the way
`analyze` does (build_session, local[*]) and runs one trivial query (`spark.range(1)
.count()`: the first query's warm-up, a cost any Spark program pays), one runs
`analyze SNAP --out DIR`. Printed: Spark's start-up (session alone, and with the first
query), analyze's wall time, and the difference, which the issue's target (analyze
within Spark's start-up + 5 s) bounds. The host's speed swings; medians and ranges.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = "import sys\nfrom rocketmq_emulator.broker.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
START_ONLY = """
import time
t = time.perf_counter()
from rocketmq_emulator.spark_analytics.session import build_session
spark = build_session()
s = time.perf_counter() - t
spark.range(1).count()
print(s, time.perf_counter() - t)
"""
STEP = re.compile(r"^\[analyze\s+([\d.]+)s\] (.*)$")


def spark_start() -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", START_ONLY], capture_output=True, text=True, check=True).stdout
    session, first_query = (float(x) for x in out.split())
    return session, first_query


def analyze(snap: Path, out: Path) -> tuple[float, dict]:
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CLI, "analyze", str(snap), "--out", str(out)], capture_output=True,
                          text=True)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"analyze failed: {done.stderr}")
    steps = {m.group(2): float(m.group(1)) for m in map(STEP.match, done.stderr.splitlines()) if m}
    return wall, steps


def span(values: list[float]) -> str:
    return f"{statistics.median(values):5.1f} s ({min(values):.1f}-{max(values):.1f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", default="3000,60000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="rmq-analyze-small-"))
    try:
        snaps = {}
        for n in [int(x) for x in args.messages.split(",")]:
            store, snap = tmp / f"store-{n}", tmp / f"snap-{n}"
            sim = subprocess.run([sys.executable, "-c", CLI, "simulate", "--seed", "7", "--messages", str(n),
                                  "--pattern", "w1", "--duration", "6h", "--out", str(store), "--json", "--quiet"],
                                 capture_output=True, text=True, check=True)
            subprocess.run([sys.executable, "-c", CLI, "snapshot", "--data-dir", str(store), "--out", str(snap)],
                           capture_output=True, check=True)
            records = json.loads((snap / "manifest.json").read_text())["commitlog"]["records"]
            snaps[n] = (snap, records, json.loads(sim.stdout))
        print(f"host: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
        results = {n: {"session": [], "first": [], "wall": []} for n in snaps}
        for run in range(args.runs):
            for n, (snap, records, _) in snaps.items():
                session, first = spark_start()
                wall, steps = analyze(snap, tmp / f"out-{n}")
                r = results[n]
                r["session"].append(session)
                r["first"].append(first)
                r["wall"].append(wall)
                print(f"  run {run + 1}, {records:,} records: Spark start {session:.1f} s (with a first query "
                      f"{first:.1f} s), analyze {wall:.1f} s, analyze - start {wall - session:.1f} s; "
                      f"in analyze: Spark started at {steps.get('Spark started', float('nan')):.1f} s", flush=True)
        print(f"\nmedians over {args.runs} runs (range)       Spark start      start+1st query  analyze          "
              "analyze - start   target: <= 5 s")
        for n, (snap, records, sim) in snaps.items():
            r = results[n]
            summary = json.loads((tmp / f"out-{n}" / "summary.json").read_text())
            same = all(summary[k] == sim[k] for k in ("produced", "succeeded", "dead_lettered", "send_backs"))
            over = [w - s for w, s in zip(r["wall"], r["session"])]
            print(f"  {records:>7,} records ({n:,} messages)  {span(r['session'])}  {span(r['first'])}  "
                  f"{span(r['wall'])}  {span(over)}  {'met' if max(over) <= 5 else 'NOT met'}; "
                  f"counts equal simulate's: {same}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
