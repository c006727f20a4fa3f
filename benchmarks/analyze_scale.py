"""`rocketmq-emulator analyze` at scale: rows/s and the driver's peak memory for 1 M and
10 M records, on local[2] and on a two-worker Spark standalone cluster on 127.0.0.1.

    .venv/bin/python benchmarks/analyze_scale.py [--records 1000000,10000000] [--no-cluster]
        [--reference OTHER_CHECKOUT/.venv/bin/python]

The records come from benchmarks/spark_datasource_bench.generate (four topics, eight
queues, originals only: the analyses' joins and aggregates all run, over rows that
find no retries). Each size is snapshotted once, then analysed twice in a child
process (`analyze SNAP --out DIR --master M --quiet` with progress on): the first
run writes the snapshot's columnar form, the second reads it. rows/s counts from
"Spark started" to the report written (Spark's own start is printed apart).

Peak memory is polled every 0.1 s from /proc (VmRSS): the driver's Python process,
the driver's JVM (on local[2] it also runs the executor's tasks), and the largest
Python worker. The driver must not hold the log: its peaks are printed beside the
log's size. One clock per run; other work on this 2-core host moves the figures.
With --reference another checkout's analyze runs beside this one's in the same run
(first runs each, then second runs interleaved: this, it, it, this), and each run's
CPU time (the command, its JVM and its Python workers) is printed too.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from spark_datasource_bench import generate  # noqa: E402

from rocketmq_emulator.store.snapshot import take_snapshot  # noqa: E402
from tests.support.spark_standalone import SparkStandalone  # noqa: E402

CLI = "import sys\nfrom rocketmq_emulator.broker.cli import main\nsys.exit(main(sys.argv[1:]))\n"
STEP = re.compile(r"^\[analyze\s+([\d.]+)s\] (.*)$")


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` so far (its own, not its reaped children's)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


class PeakWatch(threading.Thread):
    """Peak RSS of the driver's Python process, its JVM and its largest Python worker,
    and the CPU time of the command's whole process tree: the JVM outlives the command
    by a moment (it is not its waited-for child), so the command's rusage misses it."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peaks = {"driver python": 0, "driver JVM": 0, "python worker": 0}
        self.ticks: dict[int, int] = {}
        self.done = threading.Event()

    @property
    def cpu_s(self) -> float:
        return sum(self.ticks.values()) / os.sysconf("SC_CLK_TCK")

    def run(self) -> None:
        while not self.done.wait(0.1):
            self.peaks["driver python"] = max(self.peaks["driver python"], _rss_kib(self.pid))
            self.ticks[self.pid] = max(self.ticks.get(self.pid, 0), _cpu_ticks(self.pid))
            stack = _children(self.pid)
            while stack:
                p = stack.pop()
                stack += _children(p)
                self.ticks[p] = max(self.ticks.get(p, 0), _cpu_ticks(p))
                cmd = _cmdline(p)
                key = "driver JVM" if "java" in cmd.split(" ")[0] else "python worker" if "python" in cmd else None
                if key:
                    self.peaks[key] = max(self.peaks[key], _rss_kib(p))


def analyze(snap: Path, out: Path, master: str, python: str = sys.executable) -> dict:
    proc = subprocess.Popen([python, "-c", CLI, "analyze", str(snap), "--out", str(out), "--master", master],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watch = PeakWatch(proc.pid)
    watch.start()
    steps = {}
    for line in proc.stderr:
        m = STEP.match(line.strip())
        if m:
            steps[m.group(2)] = float(m.group(1))
        elif line.strip():
            print("   ", line.rstrip(), flush=True)
    proc.wait()
    watch.done.set()
    watch.join()
    cpu = watch.cpu_s                          # (each process' as last seen: 0.1 s apart)
    if proc.returncode != 0:
        raise SystemExit(f"analyze exited {proc.returncode}")
    started = next(v for k, v in steps.items() if k == "Spark started")
    wrote = next(v for k, v in steps.items() if k.startswith("wrote "))
    form = [v for k, v in steps.items() if k.startswith("writing the commit log's columnar form")]
    return {"spark_start": started, "analysis": wrote - started, "wrote_form": bool(form), "peaks": watch.peaks,
            "cpu": cpu}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", default="1000000,10000000")
    ap.add_argument("--no-cluster", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--reference", default=None, metavar="PYTHON",
                    help="another checkout's venv python (its own rocketmq_emulator): its analyze runs beside "
                         "this one's, interleaved (this, it, it, this for the second runs)")
    ap.add_argument("--second-runs", type=int, default=1, help="second runs per version (default 1; 2 with --reference)")
    args = ap.parse_args(argv)
    versions = [("this", sys.executable)] + ([("reference", args.reference)] if args.reference else [])
    seconds = args.second_runs if args.second_runs > 1 or not args.reference else 2
    tmp = Path(tempfile.mkdtemp(prefix="rmq-analyze-scale-"))
    cluster = None
    try:
        if not args.no_cluster:
            cluster = SparkStandalone(tmp / "cluster", workers=2, cores=1, memory="2g").start()
            print(f"standalone cluster {cluster.master_url}: 2 workers, 1 core and 2 GiB each", flush=True)
        print(f"host: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
        for n in [int(x) for x in args.records.split(",")]:
            store = tmp / f"store-{n}"
            t = time.perf_counter()
            nbytes = generate(store, n)
            take_snapshot(store, tmp / f"snap-{n}", wall_ms=lambda: int(time.time() * 1000))
            shutil.rmtree(store)
            print(f"\n{n:,} records, commit log {nbytes / 2**20:,.0f} MiB: generated and snapshotted in "
                  f"{time.perf_counter() - t:.0f} s", flush=True)
            masters = [("local[2]", "local[2]")] + ([("2-worker cluster", cluster.master_url)] if cluster else [])
            for label, master in masters:
                form = tmp / f"snap-{n}" / "columnar"
                runs: list[tuple[str, str, str]] = []
                for version, python in versions:               # each writes its own first form
                    runs.append((version, python, "first"))
                order = versions + versions[::-1] if len(versions) > 1 else versions * seconds
                runs += [(version, python, "second") for version, python in order]
                for version, python, run in runs:
                    if run == "first":
                        shutil.rmtree(form, ignore_errors=True)
                    r = analyze(tmp / f"snap-{n}", tmp / f"out-{n}", master, python)
                    p = r["peaks"]
                    who = f"{version:<9s} " if len(versions) > 1 else ""
                    print(f"  {label:<17s} {who}{run} run{' (writes the columnar form)' if r['wrote_form'] else '':<28s} "
                          f"Spark start {r['spark_start']:5.1f} s  analysis {r['analysis']:6.1f} s  "
                          f"{n / r['analysis'] / 1e3:7.0f} k rows/s  CPU {r['cpu']:6.1f} s   peak RSS: driver python "
                          f"{p['driver python'] / 1024:5.0f} MiB, driver JVM {p['driver JVM'] / 1024:5.0f} MiB, "
                          f"python worker {p['python worker'] / 1024:4.0f} MiB", flush=True)
            shutil.rmtree(tmp / f"snap-{n}")
    finally:
        if cluster is not None:
            cluster.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
