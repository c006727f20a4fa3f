#!/usr/bin/env python3
"""The kill -9 table: runs, acknowledged, lost, per flush mode.

Each run is tests/reliability/harness.py's: `serve` in a subprocess under a producer and
a consumer that fails about 10 % (over TCP), SIGKILL at a random moment (0.5-2.5 s in),
restart on the same directory; lost = acknowledged messages a fresh group reading from
offset 0 never sees; reused = offsetMsgIds acknowledged for two messages; not resumed =
acknowledged messages the failing group never consumed.

``--tree DIR`` runs the broker from another checkout (e.g. ``git worktree add /tmp/before
HEAD~1``), the clients from this one: the before/after comparison of a change.

Usage: python benchmarks/kill9_table.py [--runs 6] [--mode ASYNC_FLUSH --mode SYNC_FLUSH] [--tree DIR]
"""
from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.reliability.harness import run_once  # noqa: E402


def tree_env(tree: str | None) -> dict | None:
    """The environment for a serve subprocess that imports the project from ``tree``."""
    if not tree:
        return None
    shim = str(Path(__file__).resolve().parent / "tree_shim")
    return {**os.environ, "TREE": str(Path(tree).resolve()),
            "PYTHONPATH": os.pathsep.join(filter(None, [shim, os.environ.get("PYTHONPATH")]))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--mode", action="append", choices=["ASYNC_FLUSH", "SYNC_FLUSH"])
    ap.add_argument("--tree", help="run the broker from this checkout instead")
    ap.add_argument("--seed", default="kill9-table")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    if args.tree and not (Path(args.tree) / "store" / "__init__.py").is_file():
        ap.error(f"--tree {args.tree}: not a checkout of this project (no store/__init__.py)")
    logging.disable(logging.WARNING)            # the clients' reconnect warnings are expected
    env = tree_env(args.tree)
    print(f"kill -9 under load, broker from {args.tree or REPO}")
    print(f"{'mode':12} {'runs':>5} {'acknowledged':>13} {'lost':>6} {'reused ids':>11} {'not resumed':>12}")
    for mode in args.mode or ["ASYNC_FLUSH", "SYNC_FLUSH"]:
        rng = random.Random(f"{args.seed}/{mode}")
        rows = []
        with tempfile.TemporaryDirectory(prefix="kill9-") as d:
            for i in range(args.runs):
                run = run_once(Path(d) / f"run{i}", mode, rng, env=env)
                print("   ", run.row(), file=sys.stderr, flush=True)
                rows.append(run)
        lossy = sum(1 for r in rows if r.lost)
        print(f"{mode:12} {len(rows):5} {sum(r.acked for r in rows):13,} {sum(r.lost for r in rows):6,} "
              f"{sum(r.reused for r in rows):11,} {sum(r.not_resumed for r in rows):12,}   "
              f"({lossy} of {len(rows)} runs lost messages; per run lost: {[r.lost for r in rows]})", flush=True)


if __name__ == "__main__":
    main()
