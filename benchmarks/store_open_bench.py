#!/usr/bin/env python3
"""What opening a store costs: a clean reopen (checkpoint present) and one without a
checkpoint (every record walked), of a log of --mb MiB in 1 GiB segments (the default
mapedFileSizeCommitLog) — the price of checking every segment's CRC on open
(issue 17, item 6). ``--tree DIR`` imports the project from another checkout (the
before/after comparison; benchmarks/tree_shim), in a subprocess.

Usage: python benchmarks/store_open_bench.py [--mb 256] [--runs 5] [--tree DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(mb: int, runs: int) -> dict:
    import logging

    from rocketmq_emulator.store import MessageStore, StoreConfig
    from rocketmq_emulator.store.records import MessageRecord

    logging.getLogger("store").setLevel(logging.ERROR)
    cfg = StoreConfig(fsync=False)
    out = {}
    with tempfile.TemporaryDirectory(prefix="openbench-") as d:
        root = Path(d) / "s"
        body = bytes(900)
        with MessageStore(root, cfg) as s:
            i = 0
            while s.commit_log_max_offset < mb << 20:
                s.put(MessageRecord("Bench", body, i % 8, properties={"UNIQ_KEY": f"{i:032X}", "TAGS": "t"}), i)
                i += 1
        out["records"] = i
        clean = []
        for _ in range(runs):
            t = time.perf_counter()
            with MessageStore(root, cfg) as s:
                clean.append(time.perf_counter() - t)
                assert s.recovery.records_walked == 0
        walked = []
        for _ in range(max(1, runs // 2)):
            (root / "checkpoint").unlink()
            t = time.perf_counter()
            with MessageStore(root, cfg):
                walked.append(time.perf_counter() - t)
        out["clean_s"] = statistics.median(clean)
        out["walk_s"] = statistics.median(walked)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tree", help="import the project from this checkout")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mb < 1 or args.runs < 1:
        ap.error("--mb and --runs must be >= 1")
    if args.child:
        print(json.dumps(measure(args.mb, args.runs)))
        return
    env = dict(os.environ)
    if args.tree:
        if not (Path(args.tree) / "store" / "__init__.py").is_file():
            ap.error(f"--tree {args.tree}: not a checkout of this project")
        env.update(TREE=str(Path(args.tree).resolve()),
                   PYTHONPATH=os.pathsep.join(filter(None, [str(HERE / "tree_shim"), env.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, __file__, "--child", "--mb", str(args.mb), "--runs", str(args.runs)],
                          env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(proc.stderr)
    r = json.loads(proc.stdout)
    print(f"open a {args.mb} MiB store ({r['records']:,} records), code from {args.tree or HERE.parent}: "
          f"clean reopen {r['clean_s'] * 1000:.0f} ms (median of {args.runs}), "
          f"without checkpoint {r['walk_s'] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
