#!/usr/bin/env python3
"""What the fault layer costs when it does nothing (issue 38): W1 in process with no rule,
and with 10 rules that match none of its calls, beside the commit before the layer (the
same code without it: --rev/--tree). Each measurement is one child process; the three
take turns A B C C B A (the host's speed swings 2-3x within minutes), by the CPU time of
the run itself; Python calls per message under cProfile are printed too (the same on
every host, so the steadiest figure). Targets: no rule within 2 % of the base, 10
non-matching rules within 5 %.

Usage: python benchmarks/fault_layer_cost.py --rev 5b19910 [--n 20000] [--rounds 2] [--no-profile]
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
from delivery_cost import _W1 as W1_CHILD, run_child  # noqa: E402
from helpers.bench_host import loop_speed, other_tree, revision, tree_env  # noqa: E402

# W1 in a child; argv: n, benchmarks dir, peer-bench dir, profile 0/1, rules 0/1. With
# rules, every EmbeddedBroker gets 10 that match none of W1's calls: other topics,
# groups and clients, over every operation W1 makes.
_RULES = """
import sys
if sys.argv[5] == "1":
    from rocketmq_emulator.client_sdk import embedded
    plain_init = embedded.EmbeddedBroker.__init__
    def with_rules(self, *args, **kwargs):
        plain_init(self, *args, **kwargs)
        add = self.faults.add
        for i in range(3):
            add("send", "refuse", topic=f"Other{i}")
        add("pull", "delay", delay="1s", group="other-group")
        add("pull", "duplicate", topic="Other0")
        add("send_back", "refuse", group="other-group")
        add("ack", "drop", group="other-group")
        add("heartbeat", "refuse", client="no-such-client")
        add("route", "refuse", topic="Other1")
        add("send", "drop", stored=True, client="no-such-client")
        assert len(self.faults.list()) == 10
    embedded.EmbeddedBroker.__init__ = with_rules
"""
_W1 = _RULES + W1_CHILD         # then delivery_cost's W1 child as it is (argv 1-4)

SIDES = ("base", "no rule", "10 rules")


def measure(side: str, n: int, envs: dict, peer: Path, profile: bool) -> dict:
    out, _, rss = run_child(_W1, [str(n), str(HERE), str(peer), "1" if profile else "0",
                                  "1" if side == "10 rules" else "0"], envs[side])
    return {"cpu": out["cpu"], "rss": rss, "calls": out["calls"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    base = ap.add_mutually_exclusive_group(required=True)
    base.add_argument("--rev", help="the commit before the fault layer (a temporary worktree)")
    base.add_argument("--tree", help="an existing checkout of it")
    ap.add_argument("--n", type=int, default=20_000, help="W1 messages, a multiple of 100")
    ap.add_argument("--rounds", type=int, default=2, help="A B C C B A rounds")
    ap.add_argument("--no-profile", action="store_true", help="skip the cProfile runs (calls per message)")
    a = ap.parse_args()
    if a.rounds < 1 or a.n <= 0 or a.n % 100:
        ap.error("--rounds >= 1; --n a positive multiple of 100")
    peer = REPO.parent / "shared" / "peer-bench"
    if not (peer / "common.py").is_file():
        ap.error(f"W1 needs the peer benchmarks in {peer} (the W1 definition)")
    with other_tree(a.rev, a.tree) as tree:
        envs = {"base": tree_env(tree), "no rule": None, "10 rules": None}
        labels = {"base": f"base, before the layer ({revision(tree)})",
                  "no rule": f"this checkout ({revision(REPO)}), no rule",
                  "10 rules": "this checkout, 10 non-matching rules"}
        speeds = [loop_speed()]
        print(f"python {platform.python_version()}; host loop speed {speeds[0]:.1f} M steps/CPU-s at the start; "
              f"W1 in process, N={a.n:,}; A B C C B A, {a.rounds} round(s)")
        runs: dict[str, list[dict]] = {s: [] for s in SIDES}
        for _ in range(a.rounds):
            for side in SIDES + SIDES[::-1]:
                runs[side].append(measure(side, a.n, envs, peer, False))
        speeds.append(loop_speed())
        calls = {} if a.no_profile else {s: measure(s, a.n, envs, peer, True)["calls"] for s in SIDES}
    cpu = {s: statistics.median(r["cpu"] for r in runs[s]) for s in SIDES}
    for s in SIDES:
        c = f"  {calls[s] / a.n:7.1f} calls/message" if s in calls else ""
        each = ", ".join(f"{r['cpu']:.2f}" for r in runs[s])
        print(f"  {labels[s]:<52} CPU {cpu[s]:6.2f} s (runs {each})"
              f"  {cpu[s] / a.n * 1e6:6.1f} µs/message{c}")
    for s, target in (("no rule", 1.02), ("10 rules", 1.05)):
        ratio = cpu[s] / cpu["base"]
        extra = f", calls {calls[s] / calls['base']:.4f}x" if calls else ""
        print(f"  {s}: CPU {ratio:.3f}x the base (target <= {target:.2f}x: "
              f"{'met' if ratio <= target else 'NOT met'}){extra}")
    print(f"host loop speed during the run: {', '.join(f'{x:.1f}' for x in speeds)} M steps/CPU-s")


if __name__ == "__main__":
    main()
