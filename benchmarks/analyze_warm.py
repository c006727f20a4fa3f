"""`rocketmq-emulator analyze` of a small snapshot on the warm Spark server, as a developer
meets it (issue 50, item 7): the first run (no server: Spark in its own process, then the
server started in the background), a second run started as soon as the first ends (the
server still starting and warming up), and runs on the warm server.

    .venv/bin/python benchmarks/analyze_warm.py [--messages 3000] [--runs 2] [--warm 5] [--rev COMMIT | --tree DIR]

The snapshot: `simulate --seed 7 --messages N --pattern w1 --duration 6h`, snapshotted.
Each run stops the server, then runs the sequence in child processes (`analyze SNAP
--out DIR`, the whole command timed, its start included). For each command: wall
seconds, the command's own CPU seconds, and the CPU seconds the server's processes
(supervisor and JVM) spent meanwhile (for the second run: since the server started,
its start and warm-up included). Every report's tables are checked equal to the first
run's. With --rev (or --tree) the same sequence runs on that commit too, interleaved,
in a state directory of its own (a server of the user's is never touched).

The targets: a warm run <= 3 s for the whole command; the second run no longer than
the first. The host is shared: the load average is printed before and after, and each
figure is a median with its range over the runs.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analyze_small import wait_warmed  # noqa: E402
from helpers.bench_host import cpu_seconds, host_speed, other_tree, revision, tree_env, REPO  # noqa: E402

CLI = "import sys\nfrom rocketmq_emulator.broker.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
STATE_ENV = "ROCKETMQ_EMULATOR_SPARK_SERVER_DIR"


def run_cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True, env=env)


def server_pids(state: Path) -> list[int]:
    try:
        doc = json.loads((state / "server.json").read_text())
    except (OSError, ValueError):
        return []
    return [p for p in (doc.get("supervisor_pid"), doc.get("jvm_pid")) if p]


def server_cpu(state: Path) -> float:
    total = 0.0
    for pid in server_pids(state):
        try:
            total += cpu_seconds(pid)
        except OSError:
            pass
    return total


def analyze(snap: Path, out: Path, env: dict, state: Path) -> dict:
    """One command: wall s, its CPU s (with its children), the server's CPU s meanwhile."""
    server_before = server_cpu(state)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = run_cli(env, "analyze", str(snap), "--out", str(out))
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"analyze failed: {done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "server_cpu": server_cpu(state) - server_before, "stderr": done.stderr}


def tables(out: Path) -> list:
    return json.loads((out / "summary.json").read_text())["tables"]


def sequence(snap: Path, tmp: Path, env: dict, state: Path, warm_runs: int) -> dict:
    run_cli(env, "analyze", "--stop-spark")
    first = analyze(snap, tmp / "first", env, state)
    assert "started a Spark server" in first["stderr"], first["stderr"]
    second = analyze(snap, tmp / "second", env, state)
    second["server_cpu"] = server_cpu(state)            # all the server's so far: its start and warm-up
    wait_warmed(state)
    warm = [analyze(snap, tmp / "warm", env, state) for _ in range(warm_runs)]
    run_cli(env, "analyze", "--stop-spark")
    same = tables(tmp / "second") == tables(tmp / "first") == tables(tmp / "warm")
    return {"first": first, "second": second, "warm": warm, "same": same}


def span(values: list[float]) -> str:
    return f"{statistics.median(values):5.2f} ({min(values):.2f}-{max(values):.2f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--warm", type=int, default=5, help="runs on the warm server per run")
    ap.add_argument("--rev", default=None, help="also run this commit (a temporary worktree), interleaved")
    ap.add_argument("--tree", default=None, help="also run this checkout, interleaved")
    args = ap.parse_args(argv)
    print("command: " + " ".join([os.path.relpath(sys.argv[0], REPO) if sys.argv else "analyze_warm.py",
                                  *(argv if argv is not None else sys.argv[1:])]))
    tmp = Path(tempfile.mkdtemp(prefix="rmq-analyze-warm-"))
    try:
        store, snap = tmp / "store", tmp / "snap"
        run = run_cli(os.environ, "simulate", "--seed", "7", "--messages", str(args.messages), "--pattern", "w1",
                      "--duration", "6h", "--out", str(store), "--json", "--quiet")
        assert run.returncode == 0, run.stderr
        assert run_cli(os.environ, "snapshot", "--data-dir", str(store), "--out", str(snap)).returncode == 0
        records = json.loads((snap / "manifest.json").read_text())["commitlog"]["records"]
        with (other_tree(args.rev, args.tree) if args.rev or args.tree else contextlib.nullcontext()) as other:
            sides = {f"this tree ({revision(REPO)})": os.environ}
            if other is not None:
                sides[f"other ({revision(other)})"] = tree_env(other)
            print(f"snapshot: {args.messages:,} messages, {records:,} records; host: {os.cpu_count()} cores, "
                  f"load average {os.getloadavg()[0]:.1f}, {host_speed()}", flush=True)
            results = {name: [] for name in sides}
            for i in range(args.runs):
                for k, (name, env) in enumerate(sides.items()):
                    state = tmp / f"state-{k}"
                    env = {**env, STATE_ENV: str(state), "ROCKETMQ_EMULATOR_SPARK_SERVER": "on"}
                    r = sequence(snap, tmp / f"out-{k}", env, state, args.warm)
                    results[name].append(r)
                    print(f"  run {i + 1}, {name}: first {r['first']['wall']:.1f} s, second (while the server "
                          f"warms up) {r['second']['wall']:.1f} s, warm "
                          f"{', '.join(format(w['wall'], '.1f') for w in r['warm'])} s; load average "
                          f"{os.getloadavg()[0]:.1f}", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.1f}, {host_speed()}")
        print(f"\nmedian (range) over {args.runs} runs; warm: {args.warm} per run. wall s / command CPU s / "
              "server CPU s (supervisor + JVM)")
        for name, rs in results.items():
            first = [r["first"] for r in rs]
            second = [r["second"] for r in rs]
            warm = [w for r in rs for w in r["warm"]]
            print(f"  {name}: reports equal the first run's: {all(r['same'] for r in rs)}")
            for label, rows in (("first (no server)", first), ("second, while it warms up", second),
                                ("warm", warm)):
                print(f"    {label:27} {span([x['wall'] for x in rows])} / {span([x['cpu'] for x in rows])} / "
                      f"{span([x['server_cpu'] for x in rows])}")
            ratio = [s["wall"] / f["wall"] for s, f in zip(second, first)]
            print(f"    second / first (wall): {span(ratio)}   target <= 1: "
                  f"{'met' if max(ratio) <= 1 else 'NOT met'}")
            met = statistics.median(x["wall"] for x in warm) <= 3
            print(f"    warm (wall) target <= 3 s: {'met' if met else 'NOT met'}")
    finally:
        for state in tmp.glob("state-*"):          # (a run stopped half-way leaves its server)
            run_cli({**os.environ, STATE_ENV: str(state)}, "analyze", "--stop-spark")
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
