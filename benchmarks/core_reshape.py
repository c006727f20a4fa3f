#!/usr/bin/env python3
"""Issue 19's two benchmarks, this checkout beside another (the commit before the core
reshape), in one run: each measurement is a child process per side, the sides take
turns (the host's speed drifts by tens of percent), medians are compared.

1. W1 in-process (benchmarks/w1_retry.py's run_w1: client_sdk -> in-process core,
   in-memory store, events off), msgs/s; and the bare deque+dict floor
   (peer-bench/bench_inproc.py) measured in the same run. Target: >= 2x the other side.
2. The retry ladder at scale: `rocketmq-emulator simulate --messages M
   --fail-probability 1.0` (every message through all 16 retry levels and on to the
   DLQ: 17 M deliveries), wall seconds and peak RSS of the process.
   Target at M = 10,000: < 10 s and < 200 MB.

Usage: python benchmarks/core_reshape.py --rev 21249b9 [--runs 3] [--n 20000] [--ladder 10000]
       (--tree DIR instead of --rev: an existing checkout of the other side)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

_W1_CHILD = """
import json, sys
sys.path[:0] = [sys.argv[2], sys.argv[3]]
import w1_retry
r = w1_retry.run_w1(int(sys.argv[1]))
assert r["ok"], "W1 did not finish"
print(json.dumps({"msgs_per_s": r["msgs_per_s"], "wall_s": r["wall_s"], "deliveries": r["deliveries"]}))
"""

_LADDER_CHILD = """
import sys
from rocketmq_emulator.broker.cli.main import main
sys.argv = ["rocketmq-emulator", "simulate", "--messages", sys.argv[1], "--fail-probability", "1.0",
            "--quiet", "--json", "--out", sys.argv[2]]
main()
"""


def child(code: str, args: list[str], env: dict | None) -> dict:
    """Run ``code`` in a fresh interpreter; its last line, as JSON."""
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"a child failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ladder(messages: int, env: dict | None) -> tuple[float, float, dict]:
    """(wall s, peak RSS MB, the simulate summary) of one ladder run in its own process
    (reaped with wait4, for that one process's peak RSS)."""
    import time
    with tempfile.TemporaryDirectory(prefix="ladder-") as d:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _LADDER_CHILD, str(messages), str(Path(d) / "store")],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out = proc.stdout.read()       # (a summary line: small, no pipe deadlock)
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"simulate failed (exit {proc.returncode}):\n{err[-3000:]}")
    summary = json.loads(out.strip().splitlines()[-1])
    if summary["deliveries"] != 17 * messages or summary["dead_lettered"] != messages:
        raise SystemExit(f"the ladder did not run to the DLQ: {summary}")
    return wall, usage.ru_maxrss / 1024, summary


def host_speed() -> str:
    """A fixed pure-Python loop, to show how fast the host is right now."""
    import time
    t0 = time.perf_counter()
    x = 0
    for i in range(3_000_000):
        x += i & 7
    return f"{3 / (time.perf_counter() - t0):.1f} M loop steps/s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    side = ap.add_mutually_exclusive_group(required=True)
    side.add_argument("--rev", help="a commit of this repository for the other side (a temporary worktree)")
    side.add_argument("--tree", help="an existing checkout for the other side")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--n", type=int, default=20_000, help="W1 messages (a multiple of 100)")
    ap.add_argument("--ladder", type=int, default=10_000, help="ladder messages (0: skip the ladder)")
    a = ap.parse_args()
    if a.runs < 1 or a.n < 100 or a.n % 100 or a.ladder < 0:
        ap.error("--runs >= 1, --n a multiple of 100, --ladder >= 0")
    peer = REPO.parent / "shared" / "peer-bench"
    if not (peer / "common.py").is_file():
        ap.error(f"needs the peer benchmarks in {peer} (the W1 definition and the floor)")
    with tempfile.TemporaryDirectory(prefix="reshape-") as tmp:
        if a.rev:
            tree = Path(tmp) / "other"
            r = subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), a.rev],
                               capture_output=True, text=True)
            if r.returncode:
                ap.error(f"--rev {a.rev}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else 'git failed'}")
        else:
            tree = Path(a.tree).resolve()
            if not (tree / "store" / "__init__.py").is_file():
                ap.error(f"--tree {a.tree}: not a checkout of this project")
        try:
            run(a, tree, peer)
        finally:
            if a.rev:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                               capture_output=True)


def run(a, tree: Path, peer: Path) -> None:
    other_env = {**os.environ, "TREE": str(tree),
                 "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE / "tree_shim"), os.environ.get("PYTHONPATH")]))}
    sides = {"this": None, "other": other_env}
    label = {"this": f"this checkout ({_rev(REPO)})", "other": f"other ({_rev(tree)})"}
    print(f"python {platform.python_version()}, host speed {host_speed()} (it drifts; the sides alternate)")
    w1 = {s: [] for s in sides}
    for i in range(a.runs + 1):                 # run 0 of each side: warm-up, not counted
        for s, env in sides.items():
            out = child(_W1_CHILD, [str(a.n), str(HERE), str(peer)], env)
            if i:
                w1[s].append(out["msgs_per_s"])
    sys.path[:0] = [str(HERE), str(peer)]
    import w1_retry
    fl = w1_retry.floor(a.n)
    f_msgs = fl["msgs_per_s"]["median"] if fl else None
    print(f"\nW1 in-process, N={a.n}, median of {a.runs} (msgs/s):")
    for s in sides:
        m = statistics.median(w1[s])
        ratio = f", 1/{f_msgs / m:,.0f} of the floor" if f_msgs else ""
        print(f"  {label[s]:<40} {m:>10,.0f}{ratio}   runs: {', '.join(f'{v:,.0f}' for v in w1[s])}")
    if f_msgs:
        print(f"  {'floor (deque+dict, measured now)':<40} {f_msgs:>10,.0f}")
    speedup = statistics.median(w1["this"]) / statistics.median(w1["other"])
    print(f"  this / other = {speedup:.2f}x (target >= 2x: {'met' if speedup >= 2 else 'NOT met'})")
    if not a.ladder:
        return
    lad = {s: [] for s in sides}
    for _ in range(a.runs):
        for s, env in sides.items():
            wall, rss, _ = ladder(a.ladder, env)
            lad[s].append((wall, rss))
    print(f"\nretry ladder: simulate --messages {a.ladder} --fail-probability 1.0 ({17 * a.ladder:,} deliveries), "
          f"median of {a.runs}:")
    for s in sides:
        walls = [w for w, _ in lad[s]]
        rss = [r for _, r in lad[s]]
        print(f"  {label[s]:<40} {statistics.median(walls):7.2f} s  {max(rss):6.0f} MB peak RSS   "
              f"runs: {', '.join(f'{w:.1f}' for w in walls)} s")
    wall = statistics.median(w for w, _ in lad["this"])
    rss = max(r for _, r in lad["this"])
    if a.ladder == 10_000:
        print(f"  target < 10 s: {'met' if wall < 10 else 'NOT met'}; target < 200 MB: {'met' if rss < 200 else 'NOT met'}")


def _rev(tree: Path) -> str:
    r = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return (r.stdout.strip() or "?") + (" + uncommitted changes" if dirty else "")


if __name__ == "__main__":
    main()
