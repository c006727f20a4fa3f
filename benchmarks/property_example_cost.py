#!/usr/bin/env python3
"""What one example of a property-based test costs (issue 49, lever 4), this checkout
beside another commit, by process CPU time and by Python calls.

The example is the unit of work of a hypothesis test of retry handling: a fresh
EmbeddedBroker (what the ``rocketmq_broker`` fixture builds: virtual clock, in-memory
store), a producer and a push consumer (the ``rocketmq_producer`` / ``rocketmq_consumer``
factories), 20 messages of which 2 fail every delivery, ``advance("5h")`` (the whole
ladder: 16 retries, then %DLQ%), then the broker closed. Each example is checked (18
acknowledged, 2 dead-lettered after 17 deliveries each).

Each measurement is a fresh child process running EXAMPLES + 1 examples; the first is
left out (imports and first-use caches), the others' CPU (time.process_time) is split
into set-up, sends, deliveries (the advance) and teardown. The sides take turns A B B A
(the host's speed swings 2-3x within minutes); the host's loop speed is printed beside
the figures. Calls per example come from a separate child under cProfile (exact
counts, from Profile.getstats: the same on every host).

Usage: python benchmarks/property_example_cost.py (--rev REV | --tree DIR) [--examples 100]
       [--rounds 2] [--no-profile]
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from helpers.bench_host import add_other_side, interleaved, json_child, loop_speed, other_tree, revision, tree_env  # noqa: E402

PHASES = ("setup", "sends", "deliveries", "teardown")

_EXAMPLES = """
import cProfile, json, sys, time
from rocketmq_emulator.client_sdk import EmbeddedBroker, Message
from rocketmq_emulator.client_sdk.listener import ConsumeConcurrentlyStatus

OK, LATER = ConsumeConcurrentlyStatus.CONSUME_SUCCESS, ConsumeConcurrentlyStatus.RECONSUME_LATER
examples, profiled = int(sys.argv[1]), sys.argv[2] == "1"
clock = time.process_time
totals = dict.fromkeys(("setup", "sends", "deliveries", "teardown"), 0.0)
profile = cProfile.Profile() if profiled else None


def example(measured):
    seen = {}
    acked = []

    def listener(msgs, ctx):
        for m in msgs:
            seen[m.body] = seen.get(m.body, 0) + 1
        if any(m.body in (b"0", b"1") for m in msgs):
            return LATER
        acked.extend(m.body for m in msgs)
        return OK

    if measured and profile:
        profile.enable()
    t0 = clock()
    broker = EmbeddedBroker()
    broker.create_topic("Orders", 4)
    producer = broker.producer("example_producer")
    broker.push_consumer("example_group", "Orders", listener=listener)
    t1 = clock()
    for i in range(20):
        producer.send(Message("Orders", str(i).encode()))
    t2 = clock()
    broker.advance("5h")
    t3 = clock()
    dead = len(broker.messages("%DLQ%example_group"))
    broker.close()
    t4 = clock()
    if measured and profile:
        profile.disable()
    if sorted(acked) != sorted(str(i).encode() for i in range(2, 20)) or dead != 2 or \\
            seen.get(b"0") != 17 or seen.get(b"1") != 17:
        raise SystemExit(f"the example did not run as expected: acked {len(acked)}, dead {dead}, "
                         f"deliveries of the failing two {seen.get(b'0')}, {seen.get(b'1')}")
    if measured:
        for name, took in zip(totals, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            totals[name] += took


example(False)              # the first: imports and first-use caches, left out
for _ in range(examples):
    example(True)
calls = sum(e.callcount for e in profile.getstats()) if profile else None
print(json.dumps({"per_example_ms": {k: v * 1000 / examples for k, v in totals.items()},
                  "calls": None if calls is None else calls / examples}))
"""


def run_child(examples: int, env: dict | None, profile: bool) -> dict:
    return json_child(_EXAMPLES, [str(examples), "1" if profile else "0"], env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_other_side(ap)
    ap.add_argument("--examples", type=int, default=100, help="measured examples per child (one more is run first)")
    ap.add_argument("--rounds", type=int, default=2, help="A B B A rounds")
    ap.add_argument("--no-profile", action="store_true", help="skip the cProfile runs (calls per example)")
    a = ap.parse_args()
    if a.examples < 1 or a.rounds < 1:
        ap.error("--examples and --rounds must be >= 1")
    with other_tree(a.rev, a.tree) as tree:
        envs = {"this": None, "other": tree_env(tree)}
        label = {"this": f"this checkout ({revision(REPO)})", "other": f"other ({revision(tree)})"}
        speeds = [loop_speed()]
        print(f"python {platform.python_version()}; host loop speed {speeds[0]:.1f} M steps/CPU-s at the start; "
              f"sides interleaved A B B A, {a.rounds} round(s) of {a.examples} examples (+1 left out) each")
        runs = interleaved(a.rounds, lambda s: run_child(a.examples, envs[s], False)["per_example_ms"])
        speeds.append(loop_speed())
        calls = {s: run_child(a.examples, envs[s], True)["calls"] for s in envs} if not a.no_profile else {}
    total = {}
    print(f"\nCPU per example, ms (median of {2 * a.rounds} runs; each run's figure in brackets):")
    for s in envs:
        whole = [sum(r.values()) for r in runs[s]]
        total[s] = statistics.median(whole)
        parts = "  ".join(f"{p} {statistics.median(r[p] for r in runs[s]):5.2f}" for p in PHASES)
        c = f"  {calls[s]:9,.0f} calls/example" if calls.get(s) else ""
        print(f"  {label[s]:<44} total {total[s]:6.2f} ({', '.join(f'{x:.2f}' for x in whole)})  {parts}{c}")
    print(f"  other / this CPU per example: {total['other'] / total['this']:.2f}x")
    print(f"\nhost loop speed during the run: {', '.join(f'{x:.1f}' for x in speeds)} M steps/CPU-s")


if __name__ == "__main__":
    main()
