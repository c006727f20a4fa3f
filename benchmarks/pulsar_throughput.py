#!/usr/bin/env python3
"""The Pulsar front's throughput with the real Python Pulsar client (issue 21's benchmark).

A real `rocketmq-emulator serve` subprocess (real clock, fresh store per run, the Pulsar
port on a free one); the real pulsar-client 3.13.0 in this process. Per run:

  produce, one at a time   ``Producer.send`` (one SEND and its receipt per message), --sync-n msgs
  produce, window W        ``send_async`` with at most W (32) in flight, N messages (unbatched,
                           the Python client's default)
  consume with ack         a Shared consumer (receiver queue 1000): ``receive`` and ``acknowledge``
                           each of the N messages; the grouped ACKs are flushed by closing it

Every send must succeed and the consumer must see exactly the N bodies. Printed per phase:
msgs/s and the CPU seconds the client and the server used. In the same run: the raw asyncio
frame floor (../shared/peer-bench/bench_asyncio_frames.py, same N and window: one at a time
against one at a time, window against window and consume) and the 4.x SDK's W2 over TCP.
The target is >= 50 % of the floor. This host's speed drifts by tens of percent within
minutes, so each run of ours is followed at once by a run of the floor and each ratio is
taken within its pair (median and range over the pairs); the host's speed is printed beside.

Usage: python benchmarks/pulsar_throughput.py [--n 50000] [--sync-n 10000] [--window 32] [--runs 3]
       [--no-peers]
"""
from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO.parent / "shared" / "peer-bench"))

from helpers.bench_host import host_speed  # noqa: E402  (a fixed pure-Python loop)
from tests.support.processes import EmulatorProcess  # noqa: E402


def body_for(i: int) -> bytes:
    s = b"%010d" % i                     # the peer benchmarks' 100-byte body
    return s + b"x" * (100 - len(s))


def run_pulsar(n: int, sync_n: int, window: int) -> dict:
    import pulsar
    from w2_throughput import Phase

    tmp = Path(tempfile.mkdtemp(prefix="pulsar-bench-"))
    server = EmulatorProcess(tmp / "store", pulsar=True).start()
    pid = server.proc.pid
    out = {}
    client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        sync_producer = client.create_producer("bench-sync")
        sync_bodies = [body_for(i) for i in range(sync_n)]
        with Phase(pid, None) as ph:
            for b in sync_bodies:
                sync_producer.send(b)
        out["produce_one"] = (ph, sync_n)

        producer = client.create_producer("bench", max_pending_messages=window, block_if_queue_full=True)
        bodies = [body_for(i) for i in range(n)]
        errors: list = []
        done = threading.Semaphore(0)

        def sent(res, msg_id):
            if res != pulsar.Result.Ok:
                errors.append(res)
            done.release()

        with Phase(pid, None) as ph:
            for b in bodies:
                producer.send_async(b, sent)
            for _ in range(n):
                done.acquire()
        if errors:
            raise AssertionError(f"{len(errors)} window sends failed, first: {errors[0]}")
        out["produce_window"] = (ph, n)

        consumer = client.subscribe("bench", "bench-sub", consumer_type=pulsar.ConsumerType.Shared,
                                    initial_position=pulsar.InitialPosition.Earliest)
        seen = []
        with Phase(pid, None) as ph:
            for _ in range(n):
                m = consumer.receive(timeout_millis=30_000)
                seen.append(m.data())
                consumer.acknowledge(m)
            consumer.close()                                 # flushes the grouped acks
        out["consume"] = (ph, n)
        if sorted(seen) != sorted(bodies):
            raise AssertionError(f"the consumer saw {len(seen)} bodies, {len(set(seen))} distinct; wanted {n}")
    finally:
        client.close()
        server.stop()
    return {name: {"msgs_per_s": count / ph.wall, "wall_s": ph.wall, "client_cpu_s": ph.client_cpu,
                   "server_cpu_s": ph.server_cpu} for name, (ph, count) in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=50_000, help="messages in the window-produce and consume phases")
    ap.add_argument("--sync-n", type=int, default=10_000, help="messages in the one-at-a-time produce phase")
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-peers", action="store_true", help="skip the frame floor and the 4.x W2 figures")
    a = ap.parse_args()
    if a.n < 1 or a.sync_n < 1 or a.window < 1 or a.runs < 1:
        ap.error("--n, --sync-n, --window and --runs must be >= 1")
    try:
        import pulsar  # noqa: F401
    except ImportError:
        raise SystemExit("needs pulsar-client (the test extra): ./dev bench pulsar_throughput installs it")
    logging.getLogger("pulsar").setLevel(logging.ERROR)
    speed = host_speed()
    rows, echoes = [], []
    for _ in range(a.runs):
        rows.append(run_pulsar(a.n, a.sync_n, a.window))
        if not a.no_peers:
            from w2_throughput import raw_echo
            echoes.append(raw_echo(a.n, a.window, 1))       # the floor, right after: the same host state
    med = {p: {k: statistics.median(r[p][k] for r in rows) for k in rows[0][p]} for p in rows[0]}
    print(f"Pulsar binary protocol: pulsar-client -> `rocketmq-emulator serve` subprocess (real clock, store on "
          f"disk), 100-byte bodies, {a.runs} run(s), median (min-max); python {sys.version.split()[0]}; host {speed}")
    labels = {"produce_one": f"produce, one at a time (send), {a.sync_n:,} msgs",
              "produce_window": f"produce, window {a.window} (send_async), {a.n:,} msgs",
              "consume": f"consume with ack (Shared, receive + acknowledge), {a.n:,} msgs"}
    for p, m in med.items():
        rates = [r[p]["msgs_per_s"] for r in rows]
        print(f"  {labels[p]:<62} {m['msgs_per_s']:>8,.0f} msgs/s ({min(rates):,.0f}-{max(rates):,.0f}); "
              f"CPU client {m['client_cpu_s']:.2f} s, server {m['server_cpu_s']:.2f} s in {m['wall_s']:.2f} s wall")
    if a.no_peers:
        return
    from w2_throughput import run_w2
    print(f"raw asyncio frame echo (bench_asyncio_frames.py, one run after each of ours, N={a.n:,}): one at a "
          f"time {statistics.median(e['seq'] for e in echoes):,.0f} req/s, window {a.window} "
          f"{statistics.median(e['window'] for e in echoes):,.0f} req/s (medians)")
    for p, key in (("produce_one", "seq"), ("produce_window", "window"), ("consume", "window")):
        ratios = [r[p]["msgs_per_s"] / e[key] for r, e in zip(rows, echoes)]
        r = statistics.median(ratios)
        print(f"  {p:<15} / echo {key:<6} = {r:>4.0%} ({min(ratios):.0%}-{max(ratios):.0%} over the pairs)  "
              f"(target >= 50%: {'met' if r >= .5 else 'NOT met'})")
    w2 = [run_w2(a.n, a.sync_n, a.window, 0) for _ in range(a.runs)]
    print(f"4.x SDK W2 over TCP (w2_throughput.py, measured now): "
          + ", ".join(f"{p} {statistics.median(r[p]['msgs_per_s'] for r in w2):,.0f} msgs/s"
                      for p in ("produce_sync", "produce_window", "consume")))
    print(f"host after the run: {host_speed()}")


if __name__ == "__main__":
    main()
