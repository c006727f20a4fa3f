"""`rocketmq-emulator analyze` of small snapshots beside Spark's own start-up, in one run:
the first analysis (no Spark server running: it runs Spark in its own process, then
starts analyze's warm Spark server in the background), later ones (on that server, once
it has started and warmed up), and one with --no-spark-server (as in CI).

    .venv/bin/python benchmarks/analyze_small.py [--messages 3000,60000] [--runs 3] [--warm 3]

Each size is simulated (`simulate --pattern w1`: retries, dead letters) and snapshotted
once. Then, interleaved per run, child processes: one only starts Spark the way
`analyze` does in its own process (build_session, local[*]) and runs one trivial query
(`spark.range(1).count()`: the first query's warm-up, a cost any Spark program pays);
`analyze --no-spark-server`; `analyze` with no server running (it starts one); a wait
until that server answers and has run its warm-up analysis; and `--warm` more `analyze`
runs on it, which is then stopped. The server's state
lives in a directory of this benchmark's (a server of the user's own is not touched).

Printed per size: Spark's start-up (session alone, and with the first query), each
kind of analyze's wall time (the whole command, the process's start included), the
first analyze's time over the start-up, and the CPU seconds the warm runs cost the
server's JVM and the command's own process. The issue's targets: the first analyze
within start-up + 8 s; a warm one within 3 s. The host's speed swings: medians and ranges,
and the load average before and after.
"""
from __future__ import annotations

import argparse
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
STATE_ENV = "ROCKETMQ_EMULATOR_SPARK_SERVER_DIR"


def spark_start(env: dict) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", START_ONLY], capture_output=True, text=True, check=True,
                         env=env).stdout
    session, first_query = (float(x) for x in out.split())
    return session, first_query


def analyze(snap: Path, out: Path, env: dict, *args: str) -> tuple[float, float, str]:
    """(wall s, CPU s of the command's process and its children, stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CLI, "analyze", str(snap), "--out", str(out), *args],
                          capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"analyze failed: {done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stderr


def server_jvm_cpu(state_dir: Path) -> float:
    """CPU seconds the warm server's JVM has used so far."""
    pid = json.loads((state_dir / "server.json").read_text())["jvm_pid"]
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_warmed(state_dir: Path, timeout: float = 600.0) -> float:
    """Seconds until the server the first analyze left answers and has run its warm-up."""
    t = time.perf_counter()
    while time.perf_counter() - t < timeout:
        try:
            state = json.loads((state_dir / "server.json").read_text())
        except (OSError, ValueError):
            state = {}
        if state.get("status") == "ready" and state.get("warmed"):
            return time.perf_counter() - t
        time.sleep(0.2)
    raise SystemExit(f"the Spark server did not warm up within {timeout:g} s")


def stop_server(env: dict) -> None:
    subprocess.run([sys.executable, "-c", CLI, "analyze", "--stop-spark"], capture_output=True, text=True,
                   check=True, env=env)


def span(values: list[float]) -> str:
    return f"{statistics.median(values):5.1f} s ({min(values):.1f}-{max(values):.1f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", default="3000,60000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warm", type=int, default=3, help="analyses on the warm server per run")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="rmq-analyze-small-"))
    state = tmp / "spark-server"
    env = {**os.environ, STATE_ENV: str(state), "ROCKETMQ_EMULATOR_SPARK_SERVER": "on"}
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
        keys = ("session", "first", "inproc", "cold", "warming", "warm", "warm_cpu", "warm_server_cpu")
        results = {n: {k: [] for k in keys} for n in snaps}
        for run in range(args.runs):
            for n, (snap, records, _) in snaps.items():
                r = results[n]
                session, first = spark_start(env)
                inproc, _, _ = analyze(snap, tmp / f"out-{n}-inproc", env, "--no-spark-server")
                stop_server(env)
                cold, _, said = analyze(snap, tmp / f"out-{n}-cold", env)
                assert "started a Spark server" in said, said
                r["warming"].append(wait_warmed(state))
                warm = []
                for i in range(args.warm):
                    before = server_jvm_cpu(state)
                    wall, cpu, _ = analyze(snap, tmp / f"out-{n}-warm", env)
                    warm.append(wall)
                    r["warm_cpu"].append(cpu)
                    r["warm_server_cpu"].append(server_jvm_cpu(state) - before)
                stop_server(env)
                r["session"].append(session)
                r["first"].append(first)
                r["inproc"].append(inproc)
                r["cold"].append(cold)
                r["warm"] += warm
                print(f"  run {run + 1}, {records:,} records: Spark start {session:.1f} s (with a first query "
                      f"{first:.1f} s); analyze --no-spark-server {inproc:.1f} s; first analyze (starts the server) "
                      f"{cold:.1f} s, the server ready and warmed up {r['warming'][-1]:.1f} s later; warm "
                      f"{', '.join(f'{w:.1f}' for w in warm)} s", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        print(f"\nmedians over {args.runs} runs (range); warm: {args.warm} per run")
        for n, (snap, records, sim) in snaps.items():
            r = results[n]
            same = True
            for kind in ("inproc", "cold", "warm"):
                summary = json.loads((tmp / f"out-{n}-{kind}" / "summary.json").read_text())
                same &= all(summary[k] == sim[k] for k in ("produced", "succeeded", "dead_lettered", "send_backs"))
            over = [c - s for c, s in zip(r["cold"], r["session"])]
            over_inproc = [c - s for c, s in zip(r["inproc"], r["session"])]
            print(f"  {records:>7,} records ({n:,} messages); counts equal simulate's: {same}")
            print(f"    Spark start                          {span(r['session'])}")
            print(f"    Spark start + a first query          {span(r['first'])}")
            print(f"    first analyze (starts the server)    {span(r['cold'])}   over the start: {span(over)}  "
                  f"target <= 8 s: {'met' if statistics.median(over) <= 8 else 'NOT met'}")
            print(f"    then the server's start and warm-up  {span(r['warming'])}  (in the background)")
            print(f"    analyze --no-spark-server            {span(r['inproc'])}   over the start: {span(over_inproc)}")
            print(f"    warm analyze                         {span(r['warm'])}   target <= 3 s: "
                  f"{'met' if statistics.median(r['warm']) <= 3 else 'NOT met'}")
            print(f"    warm analyze, CPU: command {span(r['warm_cpu'])}, server JVM {span(r['warm_server_cpu'])}")
    finally:
        subprocess.run([sys.executable, "-c", CLI, "analyze", "--stop-spark"], capture_output=True, env=env)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
