"""`simulate --seeds` (issue 50): the swarm on Spark against a plain loop over the same
seeds in one Python process, by CPU time and by wall clock; a two-worker standalone
cluster against local[2]; and the README's W1 scenario at 200 messages a seed.

    .venv/bin/python benchmarks/swarm_bench.py [--seeds 200] [--messages 50] [--duration 10m]
        [--no-cluster] [--w1-seeds 0] [--w1-only]

Each side runs in a child process, watched from here (analyze_scale.PeakWatch: the CPU
time of its whole process tree — driver, JVM, Python workers — and peak RSS per kind).
The swarm's figures are for the run itself, Spark's start printed apart. seeds/CPU-s is
seeds over the tree's CPU seconds; "per core" divides the loop's wall rate by 1 and the
swarm's by its cores. The W1 row runs ``--w1-seeds`` seeds of w1_scenario(messages=200)
(6 h, a crash at 30 min) on local[2]: its wall time, and the peak RSS of a worker.
On a shared host other work moves every figure: the host's speed is printed beside them.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from analyze_scale import PeakWatch  # noqa: E402
from helpers.bench_host import host_speed  # noqa: E402

CHILD = """
import json, sys, time
from rocketmq_emulator.client_sdk.simulation import GroupSpec, Scenario, w1_scenario
from rocketmq_emulator.client_sdk.simulation.swarm import ROW_COLUMNS, SeedRunner, run_locally
mode, master, n, messages, duration_ms, out = sys.argv[1:7]
seeds = list(range(1, int(n) + 1))
if messages == "w1":
    base = w1_scenario(messages=200)
else:
    base = Scenario(messages=int(messages), duration_ms=int(duration_ms),
                    groups=(GroupSpec(poison_every=100, fail_once_every=10, fail_once_remainder=5),))
runner = SeedRunner(base, draw_faults=messages != "w1", keep_dir=out + "/failing")
if mode == "loop":
    print("STARTED", flush=True)
    t, c = time.monotonic(), time.process_time()
    rows = run_locally(runner, seeds)
    print(json.dumps({"wall": time.monotonic() - t, "cpu_self": time.process_time() - c, "rows": len(rows)}), flush=True)
else:
    from rocketmq_emulator.spark_analytics.session import build_session
    from rocketmq_emulator.spark_analytics.swarm import run_swarm
    t = time.monotonic()
    spark = build_session(master, app_name="swarm-bench")
    spark.range(1).count()
    start = time.monotonic() - t
    print("STARTED", flush=True)
    t = time.monotonic()
    run = run_swarm(runner, seeds, out, ROW_COLUMNS, spark=spark)
    print(json.dumps({"wall": time.monotonic() - t, "start": start, "rows": len(run.rows),
                      "partitions": run.partitions}), flush=True)
    spark.stop()
"""


def side(mode: str, master: str, args, n: int, messages: str, extra_watch=()) -> dict:
    with tempfile.TemporaryDirectory(prefix="swarm-bench-") as out:
        proc = subprocess.Popen([sys.executable, "-c", CHILD, mode, master, str(n), messages,
                                 str(args.duration_ms), out], stdout=subprocess.PIPE, text=True)
        watches = [PeakWatch(proc.pid)] + [PeakWatch(p) for p in extra_watch]
        for w in watches:
            w.start()
        before = None
        result = {}
        for line in proc.stdout:
            if line.startswith("STARTED"):
                before = sum(w.cpu_s for w in watches)
            elif line.startswith("{"):
                result = json.loads(line)
                result["cpu_tree"] = sum(w.cpu_s for w in watches) - (before or 0.0)
        proc.wait()
        for w in watches:
            w.done.set()
            w.join()
        if proc.returncode or result.get("rows") != n:
            raise SystemExit(f"{mode} on {master}: exit {proc.returncode}, {result}")
        result["peaks"] = watches[0].peaks
        result["worker_peak"] = max([w.peaks["python worker"] for w in watches])
        return result


def row(name: str, r: dict, n: int, cores: int) -> str:
    wall_rate = n / r["wall"]
    start = f"{r['start']:.1f}" if "start" in r else "-"
    return (f"| {name} | {n} | {start} | {r['wall']:.1f} | {r['cpu_tree']:.1f} | {n / r['cpu_tree']:.2f} | "
            f"{wall_rate:.2f} | {wall_rate / cores:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--messages", type=int, default=50)
    ap.add_argument("--duration", default="10m")
    ap.add_argument("--no-cluster", action="store_true")
    ap.add_argument("--w1-only", action="store_true", help="only the W1 run (--w1-seeds)")
    ap.add_argument("--w1-seeds", type=int, default=0, help="seeds of the W1 scenario at 200 messages (0: skip)")
    args = ap.parse_args()
    from rocketmq_emulator.delay_scheduler import parse_duration

    args.duration_ms = parse_duration(args.duration)
    n, msgs = args.seeds, str(args.messages)
    print(f"host: {host_speed()}; {n} seeds of {args.messages} messages, {args.duration}, W1 pattern, drawn faults")
    if not args.w1_only:
        compare(args, n, msgs)
    if args.w1_seeds:
        w1 = side("swarm", "local[2]", args, args.w1_seeds, "w1")
        print(f"\nW1 at 200 messages, {args.w1_seeds} seeds on local[2]: {w1['wall']:.1f} s wall "
              f"({args.w1_seeds / w1['wall']:.2f} seeds/s, {w1['cpu_tree'] / args.w1_seeds:.3f} CPU-s per seed; "
              f"10,000 seeds at this rate: {10_000 / (args.w1_seeds / w1['wall']) / 60:.0f} min); peak RSS of a "
              f"Python worker {w1['worker_peak'] / 1024:.0f} MiB, of the driver's JVM "
              f"{w1['peaks']['driver JVM'] / 1024:.0f} MiB")


def compare(args, n: int, msgs: str) -> None:
    loop = side("loop", "-", args, n, msgs)
    swarm = side("swarm", "local[2]", args, n, msgs)
    print("\n| run | seeds | Spark start s | wall s | CPU s (tree) | seeds/CPU-s | seeds/wall-s | per core |")
    print("|---|---|---|---|---|---|---|---|")
    print(row("plain loop, 1 process", loop, n, 1))
    print(row("swarm local[2]", swarm, n, 2))
    print(f"\nswarm/loop: seeds per CPU-second {(n / swarm['cpu_tree']) / (n / loop['cpu_tree']):.2f}x, "
          f"wall-clock rate {loop['wall'] / swarm['wall']:.2f}x (targets on a quiet host: >= 0.8x, >= 1.6x)")
    if not args.no_cluster:
        from tests.support.spark_standalone import SparkStandalone

        with tempfile.TemporaryDirectory(prefix="swarm-bench-cluster-") as d, \
                SparkStandalone(Path(d), workers=2, cores=1) as cluster:
            remote = side("swarm", cluster.master_url, args, n, msgs,
                          extra_watch=[p.pid for p in cluster.procs])
        print(row("swarm standalone, 2 workers x 1 core", remote, n, 2))
        print(f"standalone/local[2]: wall-clock rate {swarm['wall'] / remote['wall']:.2f}x")


if __name__ == "__main__":
    started = time.monotonic()
    main()
    print(f"\n(benchmark took {time.monotonic() - started:.0f} s)")
