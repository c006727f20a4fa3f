"""``rocketmq-emulator simulate``: run a scenario from a seed, print what happened.

Exit codes: 0 every invariant held; 1 an invariant broke (each violation is printed);
2 bad usage or a bad scenario (one line on stderr). ``--seeds`` runs a swarm instead
(swarm_cli.py; 130 when Ctrl-C stopped it).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from rocketmq_emulator.broker.cli.common import CommandParser, UsageError, fail, shown, usage_error
from rocketmq_emulator.delay_scheduler import DelayLevelError, parse_duration

from .fault_rules import _Invalid as _BadFault, parse_fault
from .swarm import quiet_run_logs
from .swarm_cli import check_swarm_options
from .scenario import (PROTOCOL_NAMES, Scenario, ScenarioError, TopicSpec, parse_broker_window,
                       parse_restart, parse_window)

__all__ = ["simulate_main"]


def _parser() -> argparse.ArgumentParser:
    # Options left out take the scenario's value (its file's, or the default named here).
    p = CommandParser(prog="rocketmq-emulator simulate",
                      description="Run a deterministic simulation on a virtual clock and check its invariants.")
    p.add_argument("--seed", type=int, help="the seed: same seed, same run, same bytes (default: 0)")
    # a swarm (swarm_cli.py): many seeds as Spark tasks, a Parquet row each
    p.add_argument("--seeds", help="a swarm: N (seeds 1..N), A..B or a list like 3,7,100..120, run as Spark tasks "
                                   "(needs the analytics extra); rows in --out/seeds.parquet, a summary printed (default: one "
                                   "seed, --seed, no Spark)")
    p.add_argument("--draw-faults", action="store_true", help="swarm: each seed draws its crashes, write-off "
                   "windows, consumer restarts and fault rules (replacing the scenario's)")
    p.add_argument("--shrink", action="store_true", help="swarm: shrink each invariant's first failing seed to a "
                                                         "small scenario file and print the command replaying it")
    p.add_argument("--master", help="swarm: Spark master URL, as analyze takes it (default: local[*,4], local[*] "
                                    "retrying a task up to 4 times)")
    p.add_argument("--remote", metavar="sc://HOST:PORT", help="swarm: run on a Spark Connect server instead (default: none; "
                                                                  "Spark runs where --master says)")
    p.add_argument("--partitions", type=int, help="swarm: partitions of the seeds (default: a few per core, at most "
                                                  "50 seeds each)")
    p.add_argument("--messages", type=int, help="messages to produce (default: 1000)")
    p.add_argument("--duration", help="virtual time to run, like 6h or 90m; faults must start within it "
                                      "(default: 6h)")
    p.add_argument("--settle", help="extra virtual time allowed for retries to end (default: 6h)")
    p.add_argument("--out", required=True, help="directory for the store the run leaves (must be new or empty)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the readable summary")
    p.add_argument("--scenario", help="a JSON scenario file; options given here override it (default: none, "
                                      "the defaults named here)")
    p.add_argument("--rate", type=float, help="messages per virtual second (default: 100)")
    p.add_argument("--body-size", type=int, help="message body bytes (default: 100)")
    p.add_argument("--queues", type=int, help="queues of the topic (default: 4)")
    p.add_argument("--pattern", choices=("w1", "none"),
                   help="w1: every 100th message is poison, every 10th (i %% 10 == 5) fails once; none: no "
                        "planted failures (default: none)")
    p.add_argument("--fail-probability", type=float, help="any other delivery fails with this probability "
                                                          "(default: 0)")
    p.add_argument("--slow-probability", type=float, help="a delivery overruns consumeTimeout with this probability "
                                                          "(default: 0)")
    p.add_argument("--batch-size", type=int, help="consumeMessageBatchMaxSize (failures use ackIndex; default: 1)")
    p.add_argument("--orderly", action="store_true", help="consume orderly (give --max-reconsume-times too)")
    p.add_argument("--max-reconsume-times", type=int, help="the consumer's maxReconsumeTimes (default: 16)")
    p.add_argument("--consumers", type=int, help="consumer instances in the group (default: 1)")
    p.add_argument("--protocol", choices=("4.x", "5.x", "pulsar"),
                   help="the group's consumers: 4.x push (send-back, delay levels), 5.x (pop with an "
                        "invisible time, server-side retry and DLQ) or pulsar (a Shared subscription: negative "
                        "acks, redelivery counts, the client's dead-letter policy; the topic gets 1 queue) "
                        "(default: 4.x)")
    p.add_argument("--nack-delay", metavar="DURATION",
                   help="pulsar: the negative-ack redelivery delay, whole seconds (default: 60s)")
    p.add_argument("--ack-timeout", metavar="DURATION",
                   help="pulsar: the ack timeout, 0 (off, the default) or at least 10s")
    p.add_argument("--retry-letters", choices=("increasing", "level", "delay"),
                   help="pulsar: retry through the retry-letter topic with the SDK's Pulsar consumer "
                        "(reconsume_later by attempt level, a fixed --retry-level, or a fixed --retry-delay); "
                        "the topic becomes pulsar|public|default|<name> (default: none, negative acks)")
    p.add_argument("--retry-level", type=int, help="pulsar, --retry-letters level: the ladder's level (default 1)")
    p.add_argument("--retry-delay", metavar="DURATION",
                   help="pulsar, --retry-letters delay: whole seconds, 1s to 864000s (default 10s)")
    p.add_argument("--invisible-time", metavar="DURATION",
                   help="5.x: each receive's invisible time, whole seconds like 60s or 2m (default: 60s)")
    p.add_argument("--transactions", metavar="ROLLBACK,AT_CHECK,NEVER",
                   help="the producer sends in transactions (4.x half messages); each is rolled back, committed "
                        "at the broker's check-back, or never answered with these probabilities, and committed at "
                        "once otherwise (like 0.1,0.1,0.05; 0,0,0: every one committed at once; default: none, plain sends)")
    p.add_argument("--crash-at", action="append", default=[], metavar="T",
                   help="crash the broker at virtual time T and restart it from its store (repeatable; "
                        "default: none)")
    p.add_argument("--write-off", action="append", default=[], metavar="START..END",
                   help="switch the broker's write permission off between START and END (repeatable; "
                        "default: none)")
    p.add_argument("--restart-consumer", action="append", default=[], metavar="GROUP@AT[+DOWN]",
                   help="stop GROUP's consumers at AT, start them DOWN later (DOWN default: 30s; repeatable; "
                        "default: none)")
    p.add_argument("--brokers", type=int, help="a cluster of N brokers (broker-a, broker-b, ...) behind one name "
                                                "server, every topic on each; 4.x groups only (default: 1)")
    p.add_argument("--broker-write-off", action="append", default=[], metavar="NAME@START..END",
                   help="switch broker NAME's write permission off between START and END (repeatable; "
                        "default: none)")
    p.add_argument("--broker-down", action="append", default=[], metavar="NAME@AT+DOWN",
                   help="stop broker NAME at AT and start it again DOWN later (repeatable; default: none)")
    p.add_argument("--fault", action="append", default=[], metavar="OP:ACTION[,key=value...]",
                   help="a fault rule on the broker(s), as EmbeddedBroker.faults.add takes it: "
                        "send:drop,stored,probability=0.1 or pull:delay,delay=5s,window=1m..5m or a JSON object; "
                        "keys topic, group, client, broker, times, probability, window (on the run's clock; "
                        "without one the rule lasts the duration), "
                        "delay, error, stored; rules act on the 4.x front (the producer and 4.x groups) "
                        "(repeatable; replaces the scenario file's faults; default: none)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--no-idle-skip", action="store_true",
                   help="run every periodic client request (pull timeouts, offset and heartbeat timers) instead "
                        "of carrying settled ones forward; the store written is the same, the run slower")
    return p


def _fail(msg: str, code: int = 2) -> int:
    return fail("simulate", msg, code)


# Options that only one protocol's groups take: (attribute, option, protocol).
_PROTOCOL_OPTIONS = (("nack_delay", "--nack-delay", "pulsar"), ("ack_timeout", "--ack-timeout", "pulsar"),
                     ("retry_letters", "--retry-letters", "pulsar"), ("retry_level", "--retry-level", "pulsar"),
                     ("retry_delay", "--retry-delay", "pulsar"), ("invisible_time", "--invisible-time", "5.x"))
_RETRY_MODE_OPTIONS = (("retry_level", "--retry-level", "level"), ("retry_delay", "--retry-delay", "delay"))


def _check_protocol_options(args, base: Scenario) -> None:
    """An option the run's group would ignore (another protocol's, or another retry
    mode's) is a mistake: refused, naming what it needs."""
    group = base.groups[0]
    protocol = args.protocol or group.protocol
    for attr, option, needs in _PROTOCOL_OPTIONS:
        if getattr(args, attr) is not None and protocol != needs:
            raise ScenarioError(f"{option} is for {PROTOCOL_NAMES[needs]} groups: give --protocol {needs} "
                                f"(the run's group is {protocol})")
    mode = args.retry_letters or group.retry_letters
    for attr, option, needs in _RETRY_MODE_OPTIONS:
        if getattr(args, attr) is not None and mode != needs:
            raise ScenarioError(f"{option} is for --retry-letters {needs} (the run's group retries "
                                f"{'by ' + mode if mode else 'with negative acks'})")


def _transaction_mix(text: str) -> dict:
    parts = text.split(",")
    try:
        values = [float(x) for x in parts]
    except ValueError:
        values = []
    if len(values) != 3:
        raise ScenarioError(f"--transactions takes three probabilities ROLLBACK,AT_CHECK,NEVER (like 0.1,0.1,0.05), "
                            f"got {text!r}")
    return dict(zip(("rollback_probability", "commit_at_check_probability", "never_answered_probability"), values))


def build_scenario(args) -> Scenario:
    base = Scenario.load(args.scenario) if args.scenario else Scenario()
    _check_protocol_options(args, base)
    top: dict = {"seed": args.seed or 0}
    if args.messages is not None:
        top["messages"] = args.messages
    for name in ("duration", "settle"):
        value = getattr(args, name)
        if value is not None:
            try:
                top[name + "_ms"] = parse_duration(value)
            except DelayLevelError as exc:
                raise ScenarioError(f"--{name}: {exc}") from None
    if args.crash_at:
        crashes = []
        for t in args.crash_at:
            try:
                crashes.append(parse_duration(t))
            except DelayLevelError as exc:
                raise ScenarioError(f"--crash-at: {exc}") from None
        top["crashes_ms"] = tuple(crashes)
    if args.write_off:
        top["write_off"] = tuple(parse_window(w) for w in args.write_off)
    if args.restart_consumer:
        top["consumer_restarts"] = tuple(parse_restart(r) for r in args.restart_consumer)
    if args.brokers is not None:
        top["brokers"] = args.brokers
    if args.fault:
        rules = []
        for i, text in enumerate(args.fault):
            try:
                rules.append(parse_fault(text))
            except _BadFault as exc:
                raise ScenarioError(f"--fault {text!r}: {exc}") from None
        top["faults"] = tuple(rules)
    if args.broker_write_off:
        top["broker_write_off"] = tuple(parse_broker_window(w, "--broker-write-off") for w in args.broker_write_off)
    if args.broker_down:
        top["broker_down"] = tuple(parse_broker_window(w, "--broker-down") for w in args.broker_down)
    topics = base.topics
    if args.queues is not None:
        topics = (TopicSpec(topics[0].name, args.queues),) + topics[1:]
    elif args.protocol == "pulsar":           # a Pulsar topic is one log
        topics = (TopicSpec(topics[0].name, 1),) + topics[1:]
    producers = base.producers
    groups = base.groups
    if args.retry_letters and not topics[0].name.startswith("pulsar|"):
        # a retry-letter group reads a Pulsar topic: the first topic becomes one, by name
        old, new = topics[0].name, "pulsar|public|default|" + topics[0].name
        topics = (replace(topics[0], name=new),) + topics[1:]
        producers = tuple(replace(p, topic=new) if p.topic == old else p for p in producers)
        groups = tuple(replace(g, topic=new) if g.topic == old else g for g in groups)
    if args.rate is not None or args.body_size is not None:
        p0 = producers[0]
        producers = (replace(p0, rate=p0.rate if args.rate is None else args.rate,
                             body_size=p0.body_size if args.body_size is None else args.body_size),) + producers[1:]
    if args.transactions is not None:
        producers = (replace(producers[0], transactional=True, **_transaction_mix(args.transactions)),) \
            + producers[1:]
    group_options = {}
    if args.pattern == "w1":
        group_options.update(poison_every=100, fail_once_every=10, fail_once_remainder=5)
    elif args.pattern == "none":
        group_options.update(poison_every=0, fail_once_every=0)
    for opt, key in (("fail_probability", "fail_probability"), ("slow_probability", "slow_probability"),
                     ("batch_size", "batch_size"), ("max_reconsume_times", "max_reconsume_times"),
                     ("consumers", "consumers")):
        value = getattr(args, opt)
        if value is not None:
            group_options[key] = value
    if args.orderly:
        group_options["orderly"] = True
    if args.protocol is not None:
        group_options["protocol"] = args.protocol
    if args.invisible_time is not None:
        try:
            ms = parse_duration(args.invisible_time)
        except DelayLevelError as exc:
            raise ScenarioError(f"--invisible-time: {exc}") from None
        if ms % 1000 or ms < 1000:
            raise ScenarioError(f"--invisible-time takes whole seconds of at least 1s, got {args.invisible_time!r}")
        group_options["invisible_seconds"] = ms // 1000
    if args.retry_letters:
        group_options["retry_letters"] = args.retry_letters
    if args.retry_level is not None:
        group_options["retry_level"] = args.retry_level
    for opt, key in (("nack_delay", "nack_delay_seconds"), ("ack_timeout", "ack_timeout_seconds"),
                     ("retry_delay", "retry_delay_seconds")):
        text = getattr(args, opt)
        if text is None:
            continue
        try:
            ms = 0 if text == "0" else parse_duration(text)
        except DelayLevelError as exc:
            raise ScenarioError(f"--{opt.replace('_', '-')}: {exc}") from None
        if ms % 1000:
            raise ScenarioError(f"--{opt.replace('_', '-')} takes whole seconds, got {text!r}")
        group_options[key] = ms // 1000
    if group_options:
        groups = (replace(groups[0], **group_options),) + groups[1:]
    return replace(base, topics=topics, producers=producers, groups=groups, **top)


def simulate_main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
        check_swarm_options(args)
        scenario = build_scenario(args)
    except UsageError as exc:
        return usage_error(exc)
    except ScenarioError as exc:
        return _fail(str(exc))
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        return _fail(f"--out {str(out)!r} already exists and is not an empty directory; choose a new one")
    if args.seeds is not None:
        from .swarm_cli import swarm_main
        return swarm_main(args, scenario)
    from .simulator import run_simulation

    progress = None if args.quiet else _Progress(scenario)
    try:
        with quiet_run_logs():
            result = run_simulation(scenario, out, progress=progress, skip_idle=not args.no_idle_skip)
    except OSError as exc:
        return _fail(f"cannot write the store in {str(out)!r}: {exc.strerror or exc}", 1)
    if progress:
        progress.done()
    summary = result.summary()
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        _print_summary(summary, result)
    return 0 if result.ok else 1


def _print_summary(summary: dict, result) -> None:
    s = result.scenario
    print(f"simulation seed {s.seed}: {summary['accepted']}/{s.messages} messages accepted "
          f"({summary['refused_sends']} sends refused and retried), {summary['deliveries']} deliveries, "
          f"{summary['crashes']} crash(es)")
    print(f"  produced {summary['produced']}, succeeded {summary['succeeded']}, "
          f"dead-lettered {summary['dead_lettered']}, {_retries_text(summary, s)}")
    if "transactions" in summary:
        t = summary["transactions"]
        print(f"  transactions: {t['commit']} committed, {t['at_check']} committed at a check-back, "
              f"{t['rollback']} rolled back, {t['never']} never answered (discarded); {t['checks']} check-backs")
    settled = "all messages ended" if summary["settled"] else "NOT settled: some messages were still in flight"
    print(f"  {summary['virtual_seconds']:.0f} virtual seconds in {summary['wall_seconds']:.2f} s wall; {settled}")
    if summary["idle_runs_carried"]:
        print(f"  {summary['idle_runs_carried']} idle periodic requests carried forward instead of run "
              f"(--no-idle-skip runs them)")
    for rule in summary.get("faults", ()):
        where = "" if "applied_by_broker" not in rule else " (" + ", ".join(
            f"{b} {n}" for b, n in rule["applied_by_broker"].items()) + ")"
        print(f"  fault rule {rule['rule']} ({shown(rule['describe'])}): applied {rule['applied']} time(s) of "
              f"{rule['matched']} match(es){where}")
    if result.violations:
        print(f"  {len(result.violations)} invariant violation(s):")
        for v in result.violations[:50]:
            print(f"    {v}")
        if len(result.violations) > 50:
            print(f"    ... and {len(result.violations) - 50} more")
    else:
        print("  every invariant held")
    print(f"  store: {summary['store']}  (rocketmq-emulator snapshot --data-dir {summary['store']} --out SNAP)")


def _retries_text(summary: dict, scenario: Scenario) -> str:
    """What the run's retries were, in its protocol's terms: the store's ``send_backs``
    count (every retry or dead-letter copy stored) is a 4.x word; 5.x has no send-back
    (its broker re-stores a message whose invisible time ended) and a Pulsar client
    redelivers by negative ack or publishes retry letters."""
    copies, dead = summary["send_backs"], summary["dead_lettered"]
    kinds = {"pulsar-letters" if g.protocol == "pulsar" and g.retry_letters else g.protocol for g in scenario.groups}
    if kinds == {"4.x"}:
        return f"send-backs {copies}"
    if kinds == {"5.x"}:
        return (f"broker retries {max(copies - dead, 0)} and DLQ moves {dead} (copies the broker stored when an "
                f"invisible time ended; 5.x has no send-back)")
    if kinds == {"pulsar"}:
        redeliveries = sum(g.get("redeliveries", 0) for g in summary["groups"].values())
        return (f"redeliveries {redeliveries} (the broker's count: negative acks and ack timeouts), dead-letter "
                f"copies {copies}")
    if kinds == {"pulsar-letters"}:
        return f"retry letters {max(copies - dead, 0)} (copies in <topic>-<group>-RETRY), dead-letter copies {dead}"
    return f"retry and dead-letter copies {copies} (4.x send-backs, 5.x broker retries, Pulsar client copies)"


class _Progress:
    """A line on stderr every couple of wall seconds, so long runs show they move."""

    def __init__(self, scenario: Scenario) -> None:
        self.total = scenario.duration_ms
        self.last = time.monotonic()
        self.shown = False

    def __call__(self, elapsed_ms: int, duration_ms: int, accepted: int) -> None:
        now = time.monotonic()
        if now - self.last < 2.0:
            return
        self.last = now
        self.shown = True
        print(f"simulate: {elapsed_ms / 3_600_000:.2f} h of {duration_ms / 3_600_000:.2f} h virtual, "
              f"{accepted} messages accepted", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.shown:
            print("simulate: done", file=sys.stderr, flush=True)
