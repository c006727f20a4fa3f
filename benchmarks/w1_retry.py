#!/usr/bin/env python3
"""W1 retry workload through client_sdk and the broker core, in process.

N messages (default 20,000) are produced to one queue and consumed by one clustering
push consumer. Message i is poison if i % 100 == 0 (fails every delivery: 16 retries,
then %DLQ%), fails once if i % 10 == 5, else succeeds; the consumer decides from its own
per-message delivery count (../shared/peer-bench/common.py). Retries go the real way:
CONSUMER_SEND_MSG_BACK, SCHEDULE_TOPIC_XXXX delay levels 3..18 on the VirtualClock,
%RETRY%<group>, %DLQ%<group>. Wall = produce + consume until everything is acked or
dead-lettered (virtual time jumps; the 4 h 46 min ladder costs only its events).

Verifies deliveries = 1.26 N, DLQ = exactly the poison ids, 17 deliveries per poison,
then prints msgs/s and deliveries/s beside the bare deque+dict floor
(peer-bench/bench_inproc.py, run now by this same python) and moto's SQS figure
(measured if moto is importable, else the recorded one from peers-results.md).

Usage: python benchmarks/w1_retry.py [--n 20000] [--runs 3] [--profile] [--no-peers]
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.util
import json
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PEER = REPO.parent / "shared" / "peer-bench"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(PEER))

import common  # noqa: E402  (peer-bench: the shared W1 definition)

from rocketmq_emulator.broker.config import BrokerConfig  # noqa: E402
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, EmbeddedBroker, Message  # noqa: E402

TOPIC = "W1"
GROUP = "w1_consumer"


def run_w1(n: int, profile: cProfile.Profile | None = None, produce_batch: int = 0) -> dict:
    bodies = [common.body_for(i) for i in range(n)]            # prepared outside the timer
    broker = EmbeddedBroker(config=BrokerConfig(record_events=False), pid=4242)
    broker.create_topic(TOPIC, 1)                               # "N messages produced to one queue"
    attempts: dict[int, int] = {}
    counts = {"deliveries": 0, "acked": 0}
    should_fail = common.should_fail
    index_of = common.index_of

    def listener(msgs, context):
        m = msgs[0]                                             # consumeMessageBatchMaxSize 1 (default)
        i = index_of(m.body)
        a = attempts.get(i, 0) + 1
        attempts[i] = a
        counts["deliveries"] += 1
        if should_fail(i, a):
            return RECONSUME_LATER
        counts["acked"] += 1
        return CONSUME_SUCCESS

    consumer = broker.push_consumer(GROUP, TOPIC, listener=listener)
    producer = broker.producer("w1_producer")
    poison = sum(1 for i in range(n) if common.is_poison(i))
    done_at = n - poison
    dlq_topic = "%DLQ%" + GROUP
    store = broker.core.store

    def finished() -> bool:
        return counts["acked"] >= done_at and store.max_offset(dlq_topic, 0) >= poison

    gc.collect()
    if profile:
        profile.enable()
    t0 = time.perf_counter()
    if produce_batch:
        send_batch = producer.send_batch           # SEND_BATCH_MESSAGE, produce_batch messages a request
        for s in range(0, n, produce_batch):
            send_batch([Message(TOPIC, body) for body in bodies[s:s + produce_batch]])
    else:
        send = producer.send                       # one synchronous SEND_MESSAGE_V2 per message
        for body in bodies:
            send(Message(TOPIC, body))
    t1 = time.perf_counter()
    ok = broker.run_until(finished, timeout="1d")
    t2 = time.perf_counter()
    if profile:
        profile.disable()
    virtual_s = (broker.now_ms - broker.clock.DEFAULT_START_MS) / 1000
    dlq_ids = sorted(index_of(m.body) for m in broker.dlq_messages(GROUP))
    stats = consumer.stats
    broker.close()
    return {"ok": ok, "wall_s": t2 - t0, "produce_s": t1 - t0, "consume_s": t2 - t1,
            "msgs_per_s": n / (t2 - t0), "deliveries_per_s": counts["deliveries"] / (t2 - t0),
            "consume_deliveries_per_s": counts["deliveries"] / (t2 - t1),
            "deliveries": counts["deliveries"], "acked": counts["acked"], "dlq_ids": dlq_ids,
            "poison_attempts": {attempts[i] for i in range(0, n, 100)}, "virtual_s": virtual_s,
            "send_back_ok": stats.send_back_ok}


def floor(n: int, runs: int = 1) -> dict | None:
    script = PEER / "bench_inproc.py"
    if not script.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "floor.json"
        subprocess.run([sys.executable, str(script), "--n", str(n), "--runs", str(runs), "--json", str(out)],
                       check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())["summary"]


def recorded(row_pattern: str) -> float | None:
    """The first number after the table row ``row_pattern`` matches in peers-results.md
    (the median msgs/s), None when the file or the row is missing."""
    results = PEER / "peers-results.md"
    if not results.exists():
        return None
    m = re.search(row_pattern + r"\s*\|\s*([\d,]+)", results.read_text())
    return float(m.group(1).replace(",", "")) if m else None


def recorded_floor() -> float | None:
    """The in-process floor's W1 msgs/s at N=20,000 as peers-results.md recorded it."""
    return recorded(r"in-process deque\+dict \(floor\)\s*\|\s*W1\s*\|\s*20,000")


def moto_figure() -> tuple[float, str] | None:
    if importlib.util.find_spec("moto") is not None and importlib.util.find_spec("boto3") is not None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "moto.json"
            subprocess.run([sys.executable, str(PEER / "bench_moto_sqs.py"), "w1", "--n", "1000", "--runs", "1",
                            "--json", str(out)], check=True, stdout=subprocess.DEVNULL)
            return json.loads(out.read_text())["summary"]["msgs_per_s"]["median"], "measured now, N=1,000"
    v = recorded(r"moto[^|]*SQS[^|]*\|\s*W1\s*\|\s*1,000")
    return (v, "RECORDED in peers-results.md (moto not installed here), N=1,000") if v else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile one run and print the top functions")
    ap.add_argument("--no-peers", action="store_true", help="skip the floor and moto figures")
    ap.add_argument("--batch", type=int, default=32, help="messages per SEND_BATCH_MESSAGE in the second variant "
                                                         "(0: skip it)")
    a = ap.parse_args()
    if a.n % 100:
        ap.error("--n must be a multiple of 100 (the W1 failure pattern)")
    exp = common.expected_w1(a.n)
    poison_ids = [i for i in range(a.n) if common.is_poison(i)]
    if a.profile:
        prof = cProfile.Profile()
        run_w1(a.n, prof)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return

    def measure(produce_batch: int) -> tuple[dict, dict]:
        rows = []
        for _ in range(a.runs):
            r = run_w1(a.n, produce_batch=produce_batch)
            assert r["ok"], "W1 did not finish within one virtual day"
            assert r["deliveries"] == exp["deliveries"], (r["deliveries"], exp)
            assert r["dlq_ids"] == poison_ids, "DLQ is not exactly the poison set"
            assert r["poison_attempts"] == {common.MAX_DELIVERIES}, r["poison_attempts"]
            assert r["acked"] == a.n - exp["poison"]
            rows.append(r)
        keys = ("wall_s", "produce_s", "consume_s", "msgs_per_s", "deliveries_per_s", "consume_deliveries_per_s")
        return rows[0], {k: statistics.median(r[k] for r in rows) for k in keys}

    r0, med = measure(0)
    print(f"W1 retry, client_sdk -> in-process BrokerCore (in-memory store, VirtualClock, events off), N={a.n}, "
          f"{a.runs} run(s) each, python {sys.version.split()[0]}")
    print(f"verified: deliveries={r0['deliveries']} (expected {exp['deliveries']} = 1.26 N), "
          f"DLQ={len(r0['dlq_ids'])} = poison set, {common.MAX_DELIVERIES} deliveries per poison, "
          f"acked={r0['acked']}, virtual time {r0['virtual_s'] / 3600:.2f} h")
    print(f"client_sdk W1 (sync send): {med['msgs_per_s']:,.0f} msgs/s, {med['deliveries_per_s']:,.0f} deliveries/s "
          f"(median wall {med['wall_s']:.3f} s = produce {med['produce_s']:.3f} s + consume "
          f"{med['consume_s']:.3f} s; consume-only {med['consume_deliveries_per_s']:,.0f} deliveries/s)")
    bmed = None
    if a.batch:
        _, bmed = measure(a.batch)
        print(f"client_sdk W1 (send_batch of {a.batch}): {bmed['msgs_per_s']:,.0f} msgs/s, "
              f"{bmed['deliveries_per_s']:,.0f} deliveries/s (median wall {bmed['wall_s']:.3f} s = produce "
              f"{bmed['produce_s']:.3f} s + consume {bmed['consume_s']:.3f} s)")
    if a.no_peers:
        return
    fl = floor(a.n)
    if fl:
        f_msgs = fl["msgs_per_s"]["median"]
        f_del = fl["deliveries_per_s"]["median"]
        print(f"floor (bench_inproc.py deque+dict, measured now): {f_msgs:,.0f} msgs/s, {f_del:,.0f} deliveries/s "
              f"-> client_sdk is {med['msgs_per_s'] / f_msgs:.4f} of the floor (1/{f_msgs / med['msgs_per_s']:,.0f})")
    mo = moto_figure()
    if mo:
        v, how = mo
        print(f"moto SQS W1: {v:,.0f} msgs/s ({how}) -> client_sdk is {med['msgs_per_s'] / v:,.0f}x moto")
    target = 100_000
    best = max(med["msgs_per_s"], bmed["msgs_per_s"] if bmed else 0)
    print(f"target {target:,} W1 msgs/s: {'reached' if best >= target else 'NOT reached'} "
          f"(sync send {med['msgs_per_s'] / target:.0%}"
          + (f", send_batch {bmed['msgs_per_s'] / target:.0%}" if bmed else "") + " of it)")


if __name__ == "__main__":
    main()
