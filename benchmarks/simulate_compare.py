#!/usr/bin/env python3
"""The simulator's W1 run on this checkout against another one, alternating, each run in
its own process: 10,000 messages with the W1 failure pattern, all produced at t = 0,
6 virtual hours plus settling, one crash and restart at 30 min, disk store, invariants
on (what benchmarks/simulate_bench.py calls the headline). The host is shared and its
speed drifts by tens of percent, so the two sides take turns and the medians are
compared; each side's first run is a warm-up.

Usage: python benchmarks/simulate_compare.py --tree /tmp/before [--runs 7] [--n 10000]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = """
import json, logging, sys, tempfile
from pathlib import Path
from rocketmq_emulator.client_sdk.simulation import Simulation, w1_scenario
logging.getLogger("store").setLevel(logging.ERROR)
with tempfile.TemporaryDirectory(prefix="simcompare-") as d:
    scenario = w1_scenario(seed=1, messages=int(sys.argv[1]), duration="6h", crash_at="30m", rate=1e9)
    r = Simulation(scenario, Path(d) / "store").run()
    size = sum(p.stat().st_size for p in (Path(d) / "store" / "commitlog").iterdir())
    print(json.dumps({"wall": r.wall_s, "ok": r.ok and r.settled, "log_bytes": size}))
"""


def one(n: int, env: dict | None) -> dict:
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(n)], env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if not out["ok"]:
        raise SystemExit("a run was not clean (violations or not settled)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", required=True, help="the other checkout (e.g. a git worktree of the commit before)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--n", type=int, default=10_000)
    args = ap.parse_args()
    if args.runs < 1 or args.n < 1:
        ap.error("--runs and --n must be >= 1")
    if not (Path(args.tree) / "store" / "__init__.py").is_file():
        ap.error(f"--tree {args.tree}: not a checkout of this project")
    other = {**os.environ, "TREE": str(Path(args.tree).resolve()),
             "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE / "tree_shim"), os.environ.get("PYTHONPATH")]))}
    sides = {"this": ([], None), "other": ([], other)}
    logs = {}
    for i in range(args.runs + 1):
        for name, (walls, env) in sides.items():
            r = one(args.n, env)
            logs[name] = r["log_bytes"]
            if i:                                   # the first of each side warms the caches
                walls.append(r["wall"])
    for name, (walls, _) in sides.items():
        where = HERE.parent if name == "this" else args.tree
        print(f"{name:5} ({where}): W1 {args.n:,} messages, wall min {min(walls):.3f} / median "
              f"{statistics.median(walls):.3f} / max {max(walls):.3f} s over {len(walls)} runs; "
              f"commit log {logs[name]:,} bytes")
    ratio = statistics.median(sides["this"][0]) / statistics.median(sides["other"][0])
    print(f"this / other (medians): {ratio:.3f}")


if __name__ == "__main__":
    main()
