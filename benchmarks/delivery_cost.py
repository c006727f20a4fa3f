#!/usr/bin/env python3
"""What a delivery costs, this checkout beside another commit, by process CPU time and by
Python calls (issues 36 and 37). Each measurement is one child process; the sides take
turns A B B A (the host's speed swings 2-3x within minutes, so only what ran close
together is compared), and the host's loop speed is printed beside the figures.

1. The poison ladder: `simulate --messages M --fail-probability 1.0` (every message
   through all 16 retries to the DLQ: 17 M deliveries, in process, disk store,
   invariants on). CPU seconds of the child (user + system, from wait4), CPU per
   delivery, peak RSS; and, in a separate child under cProfile, Python calls per
   delivery (cProfile's total calls / deliveries: the same on every host).
2. W1 in process (benchmarks/w1_retry.py's run_w1, N messages, in-memory store, events
   off): CPU seconds of the run itself (time.process_time around it), CPU per message,
   and calls per message under cProfile.

Usage: python benchmarks/delivery_cost.py --rev 90deaa8 [--ladder 3000] [--big-ladder 10000]
       [--n 20000] [--rounds 2] [--no-profile]
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
sys.path.insert(0, str(HERE))
from helpers.bench_host import add_other_side, interleaved, loop_speed, other_tree, revision, tree_env  # noqa: E402

_LADDER = """
import cProfile, json, pstats, sys
from rocketmq_emulator.client_sdk.simulation.cli import simulate_main
args = ["--messages", sys.argv[1], "--fail-probability", "1.0", "--quiet", "--json", "--out", sys.argv[2]]
profile = cProfile.Profile() if sys.argv[3] == "1" else None
import io, contextlib
out = io.StringIO()
with contextlib.redirect_stdout(out):
    if profile:
        profile.enable()
    rc = simulate_main(args)
    if profile:
        profile.disable()
summary = json.loads(out.getvalue().strip().splitlines()[-1])
calls = pstats.Stats(profile).total_calls if profile else None
print(json.dumps({"rc": rc, "deliveries": summary["deliveries"], "dead_lettered": summary["dead_lettered"],
                  "calls": calls}))
"""

_W1 = """
import cProfile, json, pstats, sys, time
sys.path[:0] = [sys.argv[2], sys.argv[3]]
import w1_retry
profile = cProfile.Profile() if sys.argv[4] == "1" else None
c0 = time.process_time()
r = w1_retry.run_w1(int(sys.argv[1]), profile=profile)
cpu = time.process_time() - c0
assert r["ok"], "W1 did not finish"
print(json.dumps({"cpu": cpu, "deliveries": r["deliveries"],
                  "calls": pstats.Stats(profile).total_calls if profile else None}))
"""


def run_child(code: str, args: list[str], env: dict | None) -> tuple[dict, float, float]:
    """Run ``code`` in a fresh interpreter: (its last line as JSON, its CPU seconds —
    user + system, reaped with wait4, so that one process's — and its peak RSS in MB)."""
    proc = subprocess.Popen([sys.executable, "-c", code, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"a child failed (exit {proc.returncode}):\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1]), usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def ladder(messages: int, env: dict | None, profile: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="ladder-") as d:
        out, cpu, rss = run_child(_LADDER, [str(messages), str(Path(d) / "store"), "1" if profile else "0"], env)
    if out["rc"] not in (0, None) or out["deliveries"] != 17 * messages or out["dead_lettered"] != messages:
        raise SystemExit(f"the ladder did not run to the DLQ: {out}")
    return {"cpu": cpu, "rss": rss, "deliveries": out["deliveries"], "calls": out["calls"]}


def w1(n: int, env: dict | None, peer: Path, profile: bool) -> dict:
    out, _, rss = run_child(_W1, [str(n), str(HERE), str(peer), "1" if profile else "0"], env)
    return {"cpu": out["cpu"], "rss": rss, "deliveries": out["deliveries"], "calls": out["calls"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_other_side(ap)
    ap.add_argument("--ladder", type=int, default=3000, help="poison-ladder messages (0: skip)")
    ap.add_argument("--big-ladder", type=int, default=0, help="a second, larger ladder (e.g. 10000; 0: skip)")
    ap.add_argument("--n", type=int, default=20_000, help="W1 messages, a multiple of 100 (0: skip)")
    ap.add_argument("--rounds", type=int, default=2, help="A B B A rounds per measurement")
    ap.add_argument("--no-profile", action="store_true", help="skip the cProfile runs (calls per delivery)")
    a = ap.parse_args()
    if a.rounds < 1 or a.ladder < 0 or a.big_ladder < 0 or a.n < 0 or a.n % 100:
        ap.error("--rounds >= 1; --ladder, --big-ladder >= 0; --n a multiple of 100")
    peer = REPO.parent / "shared" / "peer-bench"
    if a.n and not (peer / "common.py").is_file():
        ap.error(f"W1 needs the peer benchmarks in {peer} (the W1 definition); --n 0 skips it")
    with other_tree(a.rev, a.tree) as tree:
        run(a, tree, peer)


def run(a, tree: Path, peer: Path) -> None:
    envs = {"this": None, "other": tree_env(tree)}
    label = {"this": f"this checkout ({revision(REPO)})", "other": f"other ({revision(tree)})"}
    speeds = [loop_speed()]
    print(f"python {platform.python_version()}; host loop speed {speeds[0]:.1f} M steps/CPU-s at the start; "
          f"sides interleaved A B B A, {a.rounds} round(s)")
    rows = []
    for name, messages in (("poison ladder", a.ladder), ("poison ladder", a.big_ladder)):
        if not messages:
            continue
        res = interleaved(a.rounds, lambda s: ladder(messages, envs[s], False))
        speeds.append(loop_speed())
        calls = {s: ladder(messages, envs[s], True)["calls"] for s in envs} if not a.no_profile else {}
        rows.append((f"{name}, {messages:,} messages ({17 * messages:,} deliveries)", res, calls, "delivery"))
    if a.n:
        res = interleaved(a.rounds, lambda s: w1(a.n, envs[s], peer, False))
        speeds.append(loop_speed())
        calls = {s: w1(a.n, envs[s], peer, True)["calls"] for s in envs} if not a.no_profile else {}
        rows.append((f"W1 in process, N={a.n:,} (CPU per message)", res, calls, "message"))
    for title, res, calls, unit in rows:
        print(f"\n{title}:")
        per = {}
        for s in envs:
            cpus = [r["cpu"] for r in res[s]]
            units = a.n if unit == "message" else res[s][0]["deliveries"]
            per[s] = statistics.median(cpus) / units
            c = f"{calls[s] / (a.n if unit == 'message' else res[s][0]['deliveries']):8.1f} calls/{unit}" \
                if calls.get(s) else ""
            print(f"  {label[s]:<44} CPU {statistics.median(cpus):7.2f} s (runs {', '.join(f'{x:.2f}' for x in cpus)})"
                  f"  {per[s] * 1e6:8.1f} µs/{unit}  {units / statistics.median(cpus):9,.0f} /CPU-s"
                  f"  peak RSS {max(r['rss'] for r in res[s]):5.0f} MB  {c}")
        print(f"  other / this CPU per {unit}: {per['other'] / per['this']:.2f}x")
    print(f"\nhost loop speed during the run: {', '.join(f'{x:.1f}' for x in speeds)} M steps/CPU-s")


if __name__ == "__main__":
    main()
