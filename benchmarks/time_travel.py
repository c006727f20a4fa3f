#!/usr/bin/env python3
"""Time travel in a test: the README's pytest example — one poison message and one good
one, a consumer, ``advance("5h")`` through the whole 16-retry ladder to %DLQ% — with
idle spans skipped (the default) and with every periodic client request run
(``skip_idle=False``), side by side, checking both deliver the same attempts at the same
virtual instants.

Usage: python benchmarks/time_travel.py [--runs 5] [--hours 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rocketmq_emulator.client_sdk import ConsumeConcurrentlyStatus, EmbeddedBroker, Message  # noqa: E402


def ladder(skip_idle: bool, hours: int) -> tuple[float, list, int]:
    broker = EmbeddedBroker(skip_idle=skip_idle)
    broker.create_topic("Orders", 2)
    seen = []

    def on_orders(msgs, context):
        seen.extend((broker.now_ms, m.body, m.reconsume_times) for m in msgs)
        if msgs[0].body == b"poison":
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    broker.push_consumer("billing", "Orders", listener=on_orders)
    producer = broker.producer("app")
    producer.send(Message("Orders", b"poison"))
    producer.send(Message("Orders", b"fine"))
    t0 = time.perf_counter()
    broker.advance(f"{hours}h")
    wall = time.perf_counter() - t0
    dead = len(broker.dlq_messages("billing"))
    broker.close()
    return wall, seen, dead


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--hours", type=int, default=5)
    args = ap.parse_args()
    if args.runs < 1 or args.hours < 1:
        ap.error("--runs and --hours must be >= 1")
    walls = {True: [], False: []}
    seen = {}
    for _ in range(args.runs):
        for skip in (True, False):
            wall, log, dead = ladder(skip, args.hours)
            walls[skip].append(wall)
            seen.setdefault(skip, (log, dead))
    if seen[True] != seen[False]:
        raise SystemExit("skipping idle spans changed what was delivered when: a bug")
    log, dead = seen[True]
    fast, slow = statistics.median(walls[True]), statistics.median(walls[False])
    print(f"advance({args.hours}h) through the retry ladder: {len(log)} deliveries, {dead} dead-lettered "
          f"(median of {args.runs} runs each)")
    print(f"  idle spans skipped (default):        {fast * 1000:8.1f} ms")
    print(f"  every periodic request run:          {slow * 1000:8.1f} ms   -> skipping is {slow / fast:.0f}x, "
          f"same deliveries at the same virtual instants")


if __name__ == "__main__":
    main()
