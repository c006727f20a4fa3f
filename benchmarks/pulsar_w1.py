#!/usr/bin/env python3
"""W1 through the SDK's Pulsar consumer with retry letters (issue 22's benchmark), beside
the RocketMQ PushConsumer's W1, side by side in one run.

W1 (../shared/peer-bench/common.py): N messages (default 20,000) to one topic, one
consumer; message i is poison if i % 100 == 0 (fails every delivery: 16 retries, then the
dead-letter topic), fails once if i % 10 == 5, else succeeds; the consumer decides from
its own per-message delivery count. The Pulsar consumer is Shared, enable_retry=True,
max_redeliver_count 16: a failure is ``reconsume_later(msg)`` (seed 000's increasing
level: 1 s, 5 s, 10 s ... through the broker's delayed delivery), the 17th goes to
``<topic>-<subscription>-DLQ``. Wall = produce + consume until every message is acked or
dead-lettered.

  in process   PulsarClient(EmbeddedBroker) on a virtual clock (the delays jump), beside
               benchmarks/w1_retry.py's PushConsumer run (the same shape, 4.x retries).
  over TCP     PulsarClient("pulsar://...") against a `serve --clock virtual` subprocess,
               beside the SDK's PushConsumer through RemoteBroker against another one (4.x
               retries: CONSUMER_SEND_MSG_BACK, delay levels, %RETRY%, %DLQ%). When nothing
               came for 50 ms the benchmark moves the server's clock past the longest
               level (`clock advance`, as a test would), the same way for both, so the
               wall is the protocols' and the broker's work, not the delays.

Verified each run: deliveries = 1.26 N, the dead letters are exactly the poison ids, 17
deliveries per poison. Target (issue 22): within 2x of the PushConsumer's W1 on the same
path (in process beside in process, TCP beside TCP); the TCP run beside the in-process
PushConsumer is printed too.

Usage: python benchmarks/pulsar_w1.py [--n 20000] [--runs 3] [--no-tcp]
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO.parent / "shared" / "peer-bench"))

import common  # noqa: E402  (peer-bench: the shared W1 definition)
from helpers.bench_host import host_speed  # noqa: E402

from rocketmq_emulator.broker.config import BrokerConfig  # noqa: E402
from rocketmq_emulator.client_sdk import EmbeddedBroker  # noqa: E402
from rocketmq_emulator.client_sdk.pulsar_client import (ConsumerType, InitialPosition, PulsarClient,  # noqa: E402
                                                        PulsarTimeout)

TOPIC, SUB = "w1", "w1-sub"
MAX_LEVEL = "2h"                 # the longest level: advancing by it makes every pending retry due
MAX_REDELIVER = 16               # the consumer's default max_redeliver_count: W1's 16 retries


def run(client: PulsarClient, n: int, idle, wait_ms: int = 0) -> dict:
    """W1 through ``client``; ``idle()`` is called when nothing came within ``wait_ms``
    (it moves time)."""
    bodies = [common.body_for(i) for i in range(n)]
    consumer = client.subscribe(TOPIC, SUB, consumer_type=ConsumerType.Shared, enable_retry=True,
                                receiver_queue_size=1000)
    producer = client.create_producer(TOPIC)
    attempts: dict[int, int] = {}
    deliveries = acked = 0
    poison = sum(1 for i in range(n) if common.is_poison(i))
    gc.collect()
    t0 = time.perf_counter()
    send = producer.send
    for body in bodies:
        send(body)
    t1 = time.perf_counter()
    dead = 0
    while acked + dead < n:
        try:
            m = consumer.receive(timeout_millis=wait_ms)
        except PulsarTimeout:
            idle()
            continue
        i = common.index_of(m.data())
        a = attempts.get(i, 0) + 1
        attempts[i] = a
        deliveries += 1
        if common.should_fail(i, a):
            consumer.reconsume_later(m)         # the 17th: to the dead-letter topic
            dead += a > MAX_REDELIVER
        else:
            consumer.acknowledge(m)
            acked += 1
    t2 = time.perf_counter()
    dlq = client.subscribe(f"{TOPIC}-{SUB}-DLQ", "check", initial_position=InitialPosition.Earliest)
    dead_ids = sorted(common.index_of(dlq.receive(timeout_millis=5000).data()) for _ in range(poison))
    check(deliveries, n, dead_ids, attempts)
    return {"wall_s": t2 - t0, "produce_s": t1 - t0, "consume_s": t2 - t1, "msgs_per_s": n / (t2 - t0),
            "deliveries_per_s": deliveries / (t2 - t0)}


def in_process(n: int) -> dict:
    broker = EmbeddedBroker(config=BrokerConfig(record_events=False), pid=4242)
    client = PulsarClient(broker)
    try:
        return run(client, n, lambda: broker.advance(MAX_LEVEL))
    finally:
        client.close()
        broker.close()


def over_tcp(n: int) -> dict:
    from rocketmq_emulator.client_sdk.transport.remote import RemoteBroker
    from tests.support.processes import EmulatorProcess

    tmp = Path(tempfile.mkdtemp(prefix="pulsar-w1-"))
    server = EmulatorProcess(tmp / "store", "--clock", "virtual", pulsar=True).start()
    admin = RemoteBroker(f"127.0.0.1:{server.port}")
    client = PulsarClient(f"pulsar://127.0.0.1:{server.pulsar_port}")

    def idle() -> None:
        admin.advance_server_clock(MAX_LEVEL)
    try:
        return run(client, n, idle, wait_ms=50)      # (what is on its way comes within 50 ms)
    finally:
        client.close()
        admin.close()
        server.stop()


def push_consumer_w1(n: int) -> dict:
    from w1_retry import run_w1
    return run_w1(n)


def push_consumer_over_tcp(n: int) -> dict:
    """W1 through the SDK's PushConsumer over TCP (RemoteBroker) to a virtual-clock serve."""
    from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, Message, Producer, PushConsumer
    from rocketmq_emulator.client_sdk.transport.remote import RemoteBroker
    from tests.support.processes import EmulatorProcess

    tmp = Path(tempfile.mkdtemp(prefix="push-w1-"))
    server = EmulatorProcess(tmp / "store", "--clock", "virtual").start()
    remote = RemoteBroker(f"127.0.0.1:{server.port}")
    bodies = [common.body_for(i) for i in range(n)]
    attempts: dict[int, int] = {}
    counts = {"deliveries": 0, "acked": 0}

    def listener(msgs, context):
        i = common.index_of(msgs[0].body)
        a = attempts.get(i, 0) + 1
        attempts[i] = a
        counts["deliveries"] += 1
        if common.should_fail(i, a):
            return RECONSUME_LATER                    # the 17th: to %DLQ%<group>
        counts["acked"] += 1
        return CONSUME_SUCCESS

    poison = [i for i in range(n) if common.is_poison(i)]
    clients = [Producer("w1_producer", remote).start(), PushConsumer("w1_consumer", remote)]
    producer, consumer = clients
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener(listener)
    consumer.start()
    try:
        gc.collect()
        t0 = time.perf_counter()
        for body in bodies:
            producer.send(Message(TOPIC, body))
        t1 = time.perf_counter()
        while True:
            before = counts["deliveries"]
            remote.run_until(lambda: counts["deliveries"] != before, "50ms")
            if counts["deliveries"] != before:
                continue
            if counts["acked"] == n - len(poison) and all(attempts[i] > MAX_REDELIVER for i in poison):
                break
            remote.advance_server_clock(MAX_LEVEL)
        t2 = time.perf_counter()
        dead: list[int] = []
        dlq = PushConsumer("w1_check", remote)
        clients.append(dlq)
        dlq.subscribe("%DLQ%w1_consumer", "*")
        dlq.register_message_listener(lambda msgs, c: dead.extend(common.index_of(m.body) for m in msgs)
                                      or CONSUME_SUCCESS)
        dlq.start()
        remote.run_until(lambda: len(dead) >= len(poison), "30s")
        check(counts["deliveries"], n, sorted(dead), attempts)
        return {"wall_s": t2 - t0, "produce_s": t1 - t0, "consume_s": t2 - t1, "msgs_per_s": n / (t2 - t0),
                "deliveries_per_s": counts["deliveries"] / (t2 - t0)}
    finally:
        for c in reversed(clients):
            c.shutdown()
        remote.close()
        server.stop()


def check(deliveries: int, n: int, dead_ids: list[int], attempts: dict[int, int]) -> None:
    ok = (deliveries == round(1.26 * n) and dead_ids == [i for i in range(n) if common.is_poison(i)]
          and {attempts[i] for i in range(0, n, 100)} == {MAX_REDELIVER + 1})
    if not ok:
        raise AssertionError(f"W1 went wrong: {deliveries} deliveries, {len(dead_ids)} dead letters")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-tcp", action="store_true")
    a = ap.parse_args()
    if a.n < 100 or a.runs < 1:
        ap.error("--n must be >= 100 and --runs >= 1")
    print(f"W1 (N={a.n:,}: 1 % poison, 10 % fail once), {a.runs} run(s), median (min-max); python "
          f"{sys.version.split()[0]}; host {host_speed()}")
    # (name, function, the name of the PushConsumer run it is compared with)
    push_inproc = "RocketMQ PushConsumer, in process (w1_retry.py)"
    push_tcp = "RocketMQ PushConsumer, over TCP to serve"
    variants = [(push_inproc, push_consumer_w1, None),
                ("Pulsar SDK consumer, retry letters, in process", in_process, push_inproc)]
    if not a.no_tcp:
        variants += [(push_tcp, push_consumer_over_tcp, None),
                     ("Pulsar SDK consumer, retry letters, over TCP to serve", over_tcp, push_tcp)]
    rows: dict[str, list[float]] = {}
    for _ in range(a.runs):                 # interleaved: the host's drift hits every variant alike
        for name, fn, _base in variants:
            rows.setdefault(name, []).append(fn(a.n)["msgs_per_s"])
    for name, rates in rows.items():
        print(f"  {name:<56} {statistics.median(rates):>8,.0f} msgs/s ({min(rates):,.0f}-{max(rates):,.0f})")
    pairs = [(name, base) for name, _fn, base in variants if base is not None]
    if not a.no_tcp:
        pairs.append((variants[-1][0], push_inproc))        # shown, not the target: TCP beside in process
    for name, base in pairs:
        rs = [b / r for b, r in zip(rows[base], rows[name])]     # time ratio, run by run
        r = statistics.median(rs)
        target = "target" if (base == push_inproc) == ("in process" in name) else "not the target's pairing"
        print(f"  {name}: {r:.2f}x the time of '{base}' ({min(rs):.2f}-{max(rs):.2f} over the runs); "
              f"{'within' if r <= 2 else 'NOT within'} 2x ({target})")
    print(f"host after the run: {host_speed()}")


if __name__ == "__main__":
    main()
