#!/usr/bin/env python3
"""What the consumer's process queue costs per operation with 1, 1,000 and 100,000
messages in flight: this checkout beside another commit (issue 49, lever 5: the
SortedDict against the hand-written offset tree of d791052, e.g. ``--rev 574545d``).

Operations, each on a queue holding ``n`` messages (offsets 0..n-1) kept at ``n``:

  put            ``put_messages`` of the next offset (pulled in order, the usual case)
  remove first   ``remove_messages`` of the smallest offset (the usual ack) — its answer
                 is the new smallest offset, the one the consumer commits
  remove middle  ``remove_messages`` of an offset in the middle (an out-of-order ack)
  min offset     ``remove_messages(())``: the commit value alone (the smallest in flight)

CPU: process CPU time around each operation (``time.process_time_ns``), summed over
``--ops`` operations, the cost of the two clock reads taken off; the sides run in child
processes, A B B A, medians printed. Calls: cProfile's total calls per operation
(exact, the same on every host). The host's loop speed is printed beside the figures.

Usage: python benchmarks/process_queue_cost.py --rev 574545d [--ops 20000] [--rounds 2]
       (--tree DIR instead of --rev: an existing checkout of the other side)
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

SIZES = (1, 1_000, 100_000)
OPS = ("put", "remove first", "remove middle", "min offset")

_CHILD = r"""
import cProfile, json, pstats, sys, time
from rocketmq_emulator.client_sdk.message import MessageExt
from rocketmq_emulator.client_sdk.process_queue import ProcessQueue
from rocketmq_emulator.store.records import MessageRecord

n, ops, profiled = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
clock = time.process_time_ns
profile = cProfile.Profile()

def message(offset):
    return MessageExt.adopt(MessageRecord("T", b"x" * 100, queue_offset=offset, properties={}))

def once(fn, arg):
    # the operation alone is measured: CPU between two clock reads, or the profiler on
    # around it (its disable() is one recorded call, taken off below)
    if profiled:
        profile.enable(); fn(arg); profile.disable()
        return 0
    t0 = clock(); fn(arg); t1 = clock()
    return t1 - t0

def clock_cost():
    t = 0
    for _ in range(ops):
        t0 = clock(); t1 = clock(); t += t1 - t0
    return t / ops

pq = ProcessQueue()
live = [message(i) for i in range(n)]            # live[head:] in flight, by offset
pq.put_messages(live)
head = 0
fresh = iter([message(n + i) for i in range(2 * ops)])
spent, calls = {}, {}
for op in ("put", "remove first", "remove middle", "min offset"):
    profile = cProfile.Profile()
    t = 0
    for _ in range(ops):
        if op == "put":                          # the next offset in; then the first settled
            m = next(fresh); live.append(m)
            t += once(pq.put_messages, (m,))
            pq.remove_messages((live[head],)); head += 1
        elif op == "remove first":
            m = next(fresh); live.append(m); pq.put_messages((m,))
            t += once(pq.remove_messages, (live[head],)); head += 1
        elif op == "remove middle":              # an offset in the middle, put back after
            mid = live[head + (len(live) - head) // 2]
            t += once(pq.remove_messages, (mid,))
            pq.put_messages((mid,))
        else:
            t += once(pq.remove_messages, ())
    spent[op] = 0.0 if profiled else max(t / ops - clock_cost(), 0.0)
    if profiled:                                 # the disable() of each operation taken off
        calls[op] = pstats.Stats(profile).total_calls / ops - 1
    assert pq.msg_count == n and pq.remove_messages(()) == live[head].queue_offset, "the queue lost count"
print(json.dumps({"ns": spent, "calls": calls}))
"""


def child(n: int, ops: int, profiled: bool, env: dict | None) -> dict:
    return json_child(_CHILD, [str(n), str(ops), "1" if profiled else "0"], env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_other_side(ap)
    ap.add_argument("--ops", type=int, default=20_000, help="operations of each kind per measurement")
    ap.add_argument("--rounds", type=int, default=2, help="A B B A rounds")
    a = ap.parse_args()
    if a.ops < 1 or a.rounds < 1:
        ap.error("--ops and --rounds are at least 1")
    with other_tree(a.rev, a.tree) as tree:
        envs = {"this": None, "other": tree_env(tree)}
        label = {"this": f"this ({revision(REPO)})", "other": f"other ({revision(tree)})"}
        speeds = [loop_speed()]
        print(f"python {platform.python_version()}; host loop speed {speeds[0]:.1f} M steps/CPU-s; "
              f"{a.ops:,} operations of each kind, sides A B B A, {a.rounds} round(s)\n")
        print(f"{'in flight':>10}  {'operation':<14}" + "".join(f"  {label[s]:>30}" for s in envs) + "  other/this")
        for n in SIZES:
            runs = interleaved(a.rounds, lambda s: child(n, a.ops, False, envs[s])["ns"])
            calls = {s: child(n, min(a.ops, 2000), True, envs[s])["calls"] for s in envs}
            for op in OPS:
                ns = {s: statistics.median(r[op] for r in runs[s]) for s in envs}
                cells = "".join(f"  {ns[s]:9.0f} ns CPU {calls[s][op]:6.1f} calls" for s in envs)
                ratio = ns["other"] / ns["this"] if ns["this"] else float("nan")
                print(f"{n:>10,}  {op:<14}{cells}  {ratio:9.2f}x")
        speeds.append(loop_speed())
        print(f"\nhost loop speed: {', '.join(f'{x:.1f}' for x in speeds)} M steps/CPU-s")


if __name__ == "__main__":
    main()
