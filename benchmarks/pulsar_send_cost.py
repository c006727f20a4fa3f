#!/usr/bin/env python3
"""What a Pulsar SEND costs the server, this checkout beside another commit (issue 37, item 6;
issue 41), by process CPU time and by Python calls. The workload is pulsar_throughput.py's
window produce: the real pulsar-client 3.13.0 in this process, ``send_async`` with at most
W (32) messages in flight, N 100-byte messages, unbatched; the server is `rocketmq-emulator
serve` (store on disk, real clock) started from each side's checkout.

1. CPU: the serve process's user + system CPU seconds (/proc/PID/stat) over the phase,
   per SEND. The sides take turns A B B A in each round (the host's speed swings 2-3x
   within minutes: only what ran close together is compared); the host's loop speed is
   printed beside.
2. Calls: a serve of each side whose main thread runs under cProfile for the phase only
   (switched on and off by signals): Python calls per SEND (cProfile's total calls / N,
   the same on every host). The profiled runs are not the timed ones.

Usage: python benchmarks/pulsar_send_cost.py --rev 082701b [--n 30000] [--window 32] [--rounds 2]
       [--no-profile]   (--tree DIR instead of --rev: an existing checkout of the other side)
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]
from helpers.bench_host import cpu_seconds, loop_speed, other_tree, revision, tree_env  # noqa: E402
from tests.support.processes import read_listening  # noqa: E402

# serve, with cProfile switched on by SIGUSR1 and off by SIGUSR2 (which writes the calls)
_PROFILED_SERVE = """
import cProfile, pstats, signal, sys
try:
    from rocketmq_emulator.broker.cli.main import main
except ImportError:                     # (an older checkout: broker/cli.py)
    from rocketmq_emulator.broker.cli import main
profile = cProfile.Profile()
def on(signum, frame):
    profile.enable()
def off(signum, frame):
    profile.disable()
    with open(sys.argv[1], "w") as f:
        f.write(str(pstats.Stats(profile).total_calls))
signal.signal(signal.SIGUSR1, on)
signal.signal(signal.SIGUSR2, off)
sys.exit(main(sys.argv[2:]))
"""


def body_for(i: int) -> bytes:
    s = b"%010d" % i
    return s + b"x" * (100 - len(s))


def run_side(tree: Path | None, n: int, window: int, profile: bool) -> float:
    """One window-produce phase against a fresh serve of ``tree`` (None: this checkout):
    server CPU seconds, or with ``profile`` Python calls, over the N sends."""
    import pulsar

    tmp = Path(tempfile.mkdtemp(prefix="pulsar-send-cost-"))
    args = ["serve", "--port", "0", "--data-dir", str(tmp / "store"), "--log-level", "WARNING", "--no-grpc",
            "--no-http"]
    calls_file = tmp / "calls"
    cmd = [sys.executable, "-c", _PROFILED_SERVE, str(calls_file), *args] if profile else \
        [sys.executable, "-m", "rocketmq_emulator.broker.cli", *args]
    env = tree_env(tree) if tree is not None else dict(os.environ)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        port = read_listening(proc, kinds=("remoting", "pulsar"))["pulsar"][1]
        client = pulsar.Client(f"pulsar://127.0.0.1:{port}", operation_timeout_seconds=30,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            producer = client.create_producer("bench", max_pending_messages=window, block_if_queue_full=True)
            producer.send(b"warm-up")
            bodies = [body_for(i) for i in range(n)]
            errors: list = []
            done = threading.Semaphore(0)

            def sent(res, msg_id):
                if res != pulsar.Result.Ok:
                    errors.append(res)
                done.release()

            if profile:
                proc.send_signal(signal.SIGUSR1)
                time.sleep(0.2)                 # (the handler runs at the server's next bytecode)
            before = cpu_seconds(proc.pid)
            for b in bodies:
                producer.send_async(b, sent)
            for _ in range(n):
                done.acquire()
            after = cpu_seconds(proc.pid)
            if profile:
                proc.send_signal(signal.SIGUSR2)
                deadline = time.monotonic() + 10
                while not calls_file.exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
            if errors:
                raise AssertionError(f"{len(errors)} sends failed, first: {errors[0]}")
        finally:
            client.close()
        return int(calls_file.read_text()) if profile else after - before
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    side = ap.add_mutually_exclusive_group(required=True)
    side.add_argument("--rev", help="the other side: a commit of this repository")
    side.add_argument("--tree", help="the other side: a checkout")
    ap.add_argument("--n", type=int, default=30_000)
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-profile", action="store_true", help="skip the calls per SEND")
    a = ap.parse_args()
    if a.n < 1 or a.window < 1 or a.rounds < 1:
        ap.error("--n, --window and --rounds must be >= 1")
    with other_tree(a.rev, a.tree) as other:
        sides = {"A (this checkout)": None, f"B ({a.rev or a.tree})": other}
        names = list(sides)
        cpu: dict[str, list[float]] = {k: [] for k in names}
        speeds = [loop_speed()]
        for _ in range(a.rounds):
            for name in (names[0], names[1], names[1], names[0]):
                cpu[name].append(run_side(sides[name], a.n, a.window, profile=False) / a.n * 1e6)
            speeds.append(loop_speed())
        calls = {k: run_side(sides[k], a.n, a.window, profile=True) / a.n for k in names} if not a.no_profile else {}
        print(f"Pulsar window produce (send_async, window {a.window}, {a.n:,} x 100 B, unbatched) against `serve`, "
              f"server CPU per SEND, {a.rounds} round(s) of A B B A; python {sys.version.split()[0]}; host "
              f"{', '.join(f'{s:.1f}' for s in speeds)} M loop steps/CPU-s over the run")
        for name in names:
            tree = sides[name] if sides[name] is not None else REPO
            runs = ", ".join(f"{x:.1f}" for x in cpu[name])
            extra = f"; {calls[name]:.1f} Python calls per SEND" if calls else ""
            print(f"  {name:<22} {revision(tree):<28} {statistics.median(cpu[name]):6.1f} µs/SEND median "
                  f"(runs: {runs}){extra}")
        ratio = statistics.median(cpu[names[0]]) / statistics.median(cpu[names[1]])
        print(f"  A / B = {ratio:.2f} (CPU per SEND); target: A <= 50 µs/SEND "
              f"({'met' if statistics.median(cpu[names[0]]) <= 50 else 'NOT met'})")


if __name__ == "__main__":
    main()
