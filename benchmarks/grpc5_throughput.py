#!/usr/bin/env python3
"""The 5.x gRPC front's throughput with the real Python 5.x client (issue 20's benchmark).

A real `rocketmq-emulator serve` subprocess (real clock, fresh store per run, gRPC on a
free port); the real rocketmq-python-client 5.1.2 in this process. Per run:

  produce, one at a time   ``Producer.send`` (one SendMessage call per message), N msgs
  consume, one at a time   ``SimpleConsumer.receive(1)`` then ``ack`` (two calls a message)
  produce, window W        ``Producer.send_async``, at most W (32) sends in flight
  consume, window W        ``receive(32)`` batches, their acks from W threads at once
                           (the client's ``ack_async`` returns None in 5.1.2)

Every send must succeed and the consumers must see exactly the N bodies of their phase.
Printed per phase: msgs/s, gRPC calls/s, and the CPU seconds the client and the server
used. In the same run: the same client against a MessagingService that does nothing
(helpers/grpc5_stub_server.py: what this client can reach at all), the grpc.aio unary echo floor (../shared/peer-bench/bench_grpc_echo.py,
run now with the same N and window) and the 4.x SDK's W2 over TCP (w2_throughput.py's
produce one at a time / window / consume, run now). The target is >= 50 % of the echo's
calls/s, one at a time and windowed; the host's speed is printed beside (it drifts).

The topics are made before the clients start (`topic create` over the remoting port, as a
user does: a 5.x route names only topics that exist, and `serve` does not make 5.x topics
on first use).

--interleaved: `serve` and the stub server take turns A B B A (``--runs`` rounds), each run
next to the other, and per phase the medians of both are printed with serve's share of the
stub's calls/s (wall) and the server's CPU per call on each side (the target: serve at
>= 90 % of the stub on every phase). --max-connections is passed to `serve` (0: no limit,
so no gRPC door relay in front of the gRPC server).

Usage: python benchmarks/grpc5_throughput.py [--n 20000] [--window 32] [--runs 3] [--no-peers]
       [--interleaved] [--max-connections N]
"""
from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PEER = REPO.parent / "shared" / "peer-bench"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(PEER))

from helpers.bench_host import host_speed  # noqa: E402  (a fixed pure-Python loop)
from tests.support.processes import EmulatorProcess  # noqa: E402

TOPIC_ONE, TOPIC_WINDOW = "Bench5One", "Bench5Window"
GROUP_ONE, GROUP_WINDOW = "bench5_one", "bench5_window"
INVISIBLE_S = 60


def body_for(i: int) -> bytes:
    s = b"%010d" % i                     # the peer benchmarks' 100-byte body
    return s + b"x" * (100 - len(s))


def run_5x(n: int, window: int, serve_args: tuple[str, ...] = ()) -> dict:
    """The phases against `serve` (``serve_args`` added to its command line)."""
    tmp = Path(tempfile.mkdtemp(prefix="grpc5-"))
    server = EmulatorProcess(tmp / "store", *serve_args, grpc=True).start()
    try:
        for topic in (TOPIC_ONE, TOPIC_WINDOW):
            made = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "topic", "create", topic,
                                   "--server", server.address], capture_output=True, text=True, timeout=60)
            if made.returncode:
                raise SystemExit(f"topic create {topic}: {made.stderr.strip()}")
        return run_phases(server.grpc_port, server.proc.pid, n, window, check=True)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def run_stub(n: int, window: int) -> dict:
    """The same phases against helpers/grpc5_stub_server.py: a MessagingService that does nothing."""
    with tempfile.TemporaryDirectory(prefix="grpc5-stub-") as tmp:
        portfile = Path(tmp) / "port"
        proc = subprocess.Popen([sys.executable, str(REPO / "benchmarks" / "helpers" / "grpc5_stub_server.py"), str(portfile)])
        try:
            deadline = time.monotonic() + 30
            while not portfile.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the stub server did not start")
                time.sleep(0.05)
            return run_phases(int(portfile.read_text()), proc.pid, n, window, check=False)
        finally:
            proc.terminate()
            proc.wait(10)


def run_phases(port: int, pid: int, n: int, window: int, check: bool) -> dict:
    from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer
    from w2_throughput import Phase

    config = ClientConfiguration(f"127.0.0.1:{port}", Credentials(), request_timeout=30)
    out: dict = {}

    def message(topic: str, i: int):
        m = Message()
        m.topic = topic
        m.body = body_for(i)
        return m

    producer = Producer(config, (TOPIC_ONE, TOPIC_WINDOW))
    try:
        producer.startup()
        for topic in (TOPIC_ONE, TOPIC_WINDOW):
            producer.send(message(topic, -1))        # routes and topics: not timed
        one = [message(TOPIC_ONE, i) for i in range(n)]
        with Phase(pid, None) as ph:
            for m in one:
                producer.send(m)
        out["produce_one"] = (ph, n)

        consumer = SimpleConsumer(config, GROUP_ONE, {TOPIC_ONE: FilterExpression("*")}, await_duration=5)
        consumer.startup()
        seen: list[bytes] = []
        with Phase(pid, None) as ph:
            while len(seen) < n + 1:
                for m in consumer.receive(1, INVISIBLE_S):
                    consumer.ack(m)
                    seen.append(m.body)
        out["consume_one"] = (ph, 2 * n)
        consumer.shutdown()
        if check:
            _check(seen, n, "one at a time")

        msgs = [message(TOPIC_WINDOW, i) for i in range(n)]
        slots = threading.Semaphore(window)
        errors: list[BaseException] = []

        def sent(future):
            if future.exception() is not None:
                errors.append(future.exception())
            slots.release()

        with Phase(pid, None) as ph:
            for m in msgs:
                slots.acquire()
                producer.send_async(m).add_done_callback(sent)
            for _ in range(window):
                slots.acquire()
        if errors:
            raise AssertionError(f"{len(errors)} window sends failed, first: {errors[0]!r}")
        out["produce_window"] = (ph, n)

        consumer = SimpleConsumer(config, GROUP_WINDOW, {TOPIC_WINDOW: FilterExpression("*")}, await_duration=5)
        consumer.startup()
        seen = []
        receives = 0
        with ThreadPoolExecutor(window) as acks, Phase(pid, None) as ph:
            pending = []
            while len(seen) < n + 1:
                batch = consumer.receive(32, INVISIBLE_S)
                receives += 1
                seen.extend(m.body for m in batch)
                pending.extend(acks.submit(consumer.ack, m) for m in batch)
            for f in pending:
                f.result()
        out["consume_window"] = (ph, receives + len(seen))
        consumer.shutdown()
        if check:
            _check(seen, n, "window")
    finally:
        producer.shutdown()
    rows = {}
    for name, (ph, calls) in out.items():
        rows[name] = {"msgs_per_s": n / ph.wall, "calls_per_s": calls / ph.wall, "wall_s": ph.wall,
                      "client_cpu_s": ph.client_cpu, "server_cpu_s": ph.server_cpu}
    return rows


def _check(seen: list[bytes], n: int, what: str) -> None:
    want = sorted([body_for(-1)] + [body_for(i) for i in range(n)])
    if sorted(seen) != want:
        raise AssertionError(f"consume {what}: saw {len(seen)} bodies, {len(set(seen))} distinct; wanted {n + 1}")


def echo_floor(n: int, window: int, runs: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "echo.json"
        subprocess.run([sys.executable, str(PEER / "bench_grpc_echo.py"), "--n", str(n), "--runs", str(runs),
                        "--window", str(window), "--json", str(out)], check=True, stdout=subprocess.DEVNULL)
        summary = json.loads(out.read_text())["summary"]
    return {"one": summary["one_at_a_time_per_s"]["median"], "window": summary["window_per_s"]["median"]}


PHASES = ("produce_one", "consume_one", "produce_window", "consume_window")


def interleaved(n: int, window: int, rounds: int, serve_args: tuple[str, ...]) -> None:
    """serve and the stub A B B A: per phase, serve's calls/s as a share of the stub's (wall)
    and each server's process CPU per call."""
    speeds = [host_speed()]
    runs: dict[str, list[dict]] = {"serve": [], "stub": []}
    for _ in range(rounds):
        for side in ("serve", "stub", "stub", "serve"):
            runs[side].append(run_5x(n, window, serve_args) if side == "serve" else run_stub(n, window))
    speeds.append(host_speed())
    flags = " ".join(serve_args) or "(serve's defaults)"
    print(f"RocketMQ 5.x over gRPC, `serve` {flags} against the do-nothing stub, A B B A x {rounds} "
          f"({2 * rounds} runs each), N={n:,}, window {window}; python {sys.version.split()[0]}")
    print(f"  {'phase':<16}{'serve calls/s':>14}{'stub calls/s':>14}{'serve/stub':>11}"
          f"{'serve CPU/call':>16}{'stub CPU/call':>15}{'CPU ratio':>11}")
    for p in PHASES:
        med = {s: {k: statistics.median(r[p][k] for r in runs[s]) for k in ("calls_per_s", "server_cpu_s", "wall_s")}
               for s in runs}
        calls = {s: med[s]["calls_per_s"] * med[s]["wall_s"] for s in runs}
        cpu = {s: med[s]["server_cpu_s"] / calls[s] * 1e6 for s in runs}
        share = med["serve"]["calls_per_s"] / med["stub"]["calls_per_s"]
        spread = ", ".join(f"{r[p]['calls_per_s']:,.0f}" for r in runs["serve"])
        print(f"  {p:<16}{med['serve']['calls_per_s']:>14,.0f}{med['stub']['calls_per_s']:>14,.0f}{share:>10.0%}"
              f"{cpu['serve']:>13.0f} µs{cpu['stub']:>12.0f} µs{cpu['serve'] / cpu['stub']:>10.2f}x"
              f"   (serve runs {spread}; target >= 90 %: {'met' if share >= .9 else 'NOT met'})")
    print(f"host: {', '.join(speeds)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000, help="messages per phase")
    ap.add_argument("--window", type=int, default=32, help="calls in flight (the echo floor uses the same)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-peers", action="store_true", help="skip the echo floor and the 4.x W2 figures")
    ap.add_argument("--interleaved", action="store_true",
                    help="serve and the stub server A B B A, --runs rounds; per phase serve's share of the stub")
    ap.add_argument("--max-connections", type=int, default=None,
                    help="passed to serve (0: no limit, no gRPC door relay); serve's default when left out")
    a = ap.parse_args()
    if a.n < 1 or a.window < 1 or a.runs < 1 or (a.max_connections is not None and a.max_connections < 0):
        ap.error("--n, --window and --runs must be >= 1, --max-connections >= 0")
    try:
        import rocketmq  # noqa: F401
    except ImportError:
        raise SystemExit("needs the grpc extra (rocketmq-python-client): ./dev bench grpc5_throughput installs it")
    logging.getLogger("rocketmq").setLevel(logging.ERROR)
    serve_args = () if a.max_connections is None else ("--max-connections", str(a.max_connections))
    if a.interleaved:
        interleaved(a.n, a.window, a.runs, serve_args)
        return
    speed = host_speed()
    rows = [run_5x(a.n, a.window, serve_args) for _ in range(a.runs)]
    phases = list(rows[0])
    med = {p: {k: statistics.median(r[p][k] for r in rows) for k in rows[0][p]} for p in phases}
    print(f"RocketMQ 5.x over gRPC: rocketmq-python-client -> `rocketmq-emulator serve` subprocess (real clock, "
          f"store on disk), 100-byte bodies, N={a.n:,}, {a.runs} run(s), median (min-max); python "
          f"{sys.version.split()[0]}; host {speed}")
    labels = {"produce_one": "produce, one at a time (send)",
              "consume_one": "consume, one at a time (receive 1 + ack: 2 calls/msg)",
              "produce_window": f"produce, window {a.window} (send_async)",
              "consume_window": f"consume, window {a.window} (receive 32, acks {a.window} at once)"}
    for p in phases:
        m = med[p]
        calls = [r[p]["calls_per_s"] for r in rows]
        print(f"  {labels[p]:<58} {m['msgs_per_s']:>7,.0f} msgs/s, {m['calls_per_s']:>7,.0f} calls/s "
              f"({min(calls):,.0f}-{max(calls):,.0f}); CPU client {m['client_cpu_s']:.2f} s, "
              f"server {m['server_cpu_s']:.2f} s in {m['wall_s']:.2f} s wall")
    if a.no_peers:
        return
    stub = [run_stub(a.n, a.window) for _ in range(a.runs)]
    stub_med = {p: statistics.median(r[p]["calls_per_s"] for r in stub) for p in phases}
    print("the same client against a MessagingService that does nothing (helpers/grpc5_stub_server.py, measured now):")
    for p in phases:
        print(f"  {labels[p]:<58} {stub_med[p]:>7,.0f} calls/s; `serve` reaches {med[p]['calls_per_s'] / stub_med[p]:.0%}")
    echo = echo_floor(a.n, a.window, a.runs)
    print(f"grpc.aio unary echo (bench_grpc_echo.py, measured now, N={a.n:,}, {a.runs} run(s)): "
          f"one at a time {echo['one']:,.0f} calls/s, window {a.window} {echo['window']:,.0f} calls/s")
    for p, mode in (("produce_one", "one"), ("consume_one", "one"), ("produce_window", "window"),
                    ("consume_window", "window")):
        r = med[p]["calls_per_s"] / echo[mode]
        print(f"  {p:<15} calls/s / echo {mode:<6} = {r:>4.0%}  (target >= 50%: {'met' if r >= .5 else 'NOT met'}; "
              f"the do-nothing server: {stub_med[p] / echo[mode]:.0%})")
    from w2_throughput import run_w2
    w2 = [run_w2(a.n, a.n, a.window, 0) for _ in range(a.runs)]
    print(f"4.x SDK W2 over TCP (w2_throughput.py, measured now, N={a.n:,}): "
          + ", ".join(f"{p} {statistics.median(r[p]['msgs_per_s'] for r in w2):,.0f} msgs/s"
                      for p in ("produce_sync", "produce_window", "consume")))
    print(f"host after the run: {host_speed()}")


if __name__ == "__main__":
    main()
