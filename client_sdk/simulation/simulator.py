"""Run a scenario from one seed on a virtual clock: the real broker core over a store
on disk, the real SDK clients in process, faults on a timeline, invariants checked.

Determinism. Everything that reaches the commit log comes from the seed and the
virtual clock: the clock starts at a fixed instant (2026-01-01T00:00:00Z), client pids
and instance names are fixed, UNIQ_KEYs derive from them and the clock, bodies and
random failures come from ``random.Random(seed)``, the broker's own randomness from a
generator seeded from it. The same (scenario, seed) writes the same bytes.

Time. Producers send on the runtime's timers (message n at its producer's rate, in
number order), so sends, pulls, retries and offset commits interleave as they would
on a real clock. The driver moves time from one timeline action (crash, write
permission off/on, consumer stop/start) to the next, then lets the run settle:
time keeps moving, in one-minute steps, until every accepted message has ended in
every group (consumed, or dead-lettered) or ``settle`` runs out. A listener that
overruns consumeTimeout moves time itself, through the same timeline: the world goes
on while it runs, each fault at its time (a crash kills the process inside it).

A crash is the emulator's process dying: the store stops as a killed broker stops
(``MessageStore.crash`` writes and syncs nothing: what the store had handed to the OS
survives — every acknowledged put is, before its result is returned — and nothing else
does: unpersisted offsets, queue files and checkpoint are gone), every client and the
client loop are dropped, and all of it is started again from the store — consumers
resume from the offsets the broker had persisted, so some messages are delivered again
(RocketMQ is at-least-once; the invariants allow that after a crash). After each
restart the checker reads every accepted message back at its offsetMsgId (``durable``).
"""
from __future__ import annotations

import gc
import random
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

from rocketmq_emulator.broker.cluster import broker_names
from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.events import EventKind
from rocketmq_emulator.broker.facade.across import store_accounts
from rocketmq_emulator.broker.fronts.pulsar.entry_keys import pulsar_entry_keys
from rocketmq_emulator.broker.retry_lifecycle import DLQ_PREFIX, rocketmq5_retry_interval_ms
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store.accounting import Ledger
from rocketmq_emulator.store.records import TRANS_CHECK_MAX_TIME_TOPIC, create_offset_msg_id

from ..embedded import EmbeddedBroker
from ..errors import MQClientError
from ..listener import ConsumeConcurrentlyStatus, ConsumeOrderlyStatus
from ..message import Message
from ..push_consumer import PushConsumer
from ..subscription import MessageSelector
from ..transaction import LocalTransactionState
from . import fault_rules
from .fault_rules import RuleBook
from .invariants import EXPIRED_LEVEL, InvariantChecker, Violation
from .pop_consumer import PopConsumer
from .pulsar_consumer import PulsarConsumer, dead_letter_topic
from .scenario import PRODUCER_GROUP, START_MS, GroupSpec, Scenario, ScenarioError, message_properties

__all__ = ["Simulation", "SimulationResult", "START_MS", "run_simulation"]

SIM_PID = 4242                        # the simulated process's pid (UNIQ_KEYs and client ids)
SEND_RETRY_MS = 1000                  # a refused send is tried again this much later
SETTLE_STEP_MS = 60_000
SIM_FLUSH_INTERVAL_MS = 5000
NUMBER_WIDTH = 8                      # bodies start with the message number: b"00000042|..."

_OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
_LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER
_ORDERLY_OK = ConsumeOrderlyStatus.SUCCESS
_SUSPEND = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
# what a transactional message's local transaction says, and its producer's checker at a
# check-back, for each end the seed draws
_LOCAL_TRANSACTION = {"commit": LocalTransactionState.COMMIT_MESSAGE,
                      "rollback": LocalTransactionState.ROLLBACK_MESSAGE,
                      "at_check": LocalTransactionState.UNKNOW, "never": LocalTransactionState.UNKNOW}
_CHECK_ANSWER = {"commit": LocalTransactionState.COMMIT_MESSAGE, "rollback": LocalTransactionState.ROLLBACK_MESSAGE,
                 "at_check": LocalTransactionState.COMMIT_MESSAGE, "never": LocalTransactionState.UNKNOW}


@dataclass
class SimulationResult:
    scenario: Scenario
    store_dir: Path
    virtual_ms: int                    # virtual time the run covered, settling included
    settled: bool                      # every accepted message ended in every group
    wall_s: float
    accepted: int
    refused_sends: int
    deliveries: int
    crashes: int
    violations: list[Violation]
    accounts: dict                     # store.accounting summary of the store
    per_group: dict = field(default_factory=dict)
    idle_runs_carried: int = 0         # periodic jobs and idle pull round trips skipped over
    transactions: dict = field(default_factory=dict)   # transactional sends: how many ended how, check-backs
    faults: list = field(default_factory=list)         # the scenario's fault rules, each with its hits

    @property
    def ok(self) -> bool:
        return not self.violations

    def summary(self) -> dict:
        """What ``simulate --json`` prints: the four shared counts first."""
        a = self.accounts
        return {
            "produced": a["produced"], "succeeded": a["succeeded"], "dead_lettered": a["dead_lettered"],
            "send_backs": a["send_backs"], "invariant_violations": len(self.violations),
            "seed": self.scenario.seed, "messages": self.scenario.messages, "accepted": self.accepted,
            "refused_sends": self.refused_sends, "deliveries": self.deliveries, "crashes": self.crashes,
            "settled": self.settled, "virtual_seconds": self.virtual_ms / 1000, "wall_seconds": round(self.wall_s, 3),
            "idle_runs_carried": self.idle_runs_carried,
            "store": str(self.store_dir), "groups": self.per_group,
            "violations": [v.to_dict() for v in self.violations[:100]],
        } | ({"transactions": self.transactions} if self.transactions else {}) \
            | ({"faults": self.faults} if self.scenario.faults else {})


class Simulation:
    """One run. ``run()`` does it all; tests (and the state machine) may instead call
    ``start``, ``advance``, ``crash``, ``set_writeable``, ``restart_consumers`` and
    ``finish`` themselves. ``consumer_class`` lets a test plant a faulty consumer.
    ``skip_idle=False`` runs every periodic client request instead of carrying settled
    ones forward (``client_sdk.transport.idle_skip``): same bytes, more wall time."""

    def __init__(self, scenario: Scenario, store_dir: str | Path, *,
                 consumer_class: type[PushConsumer] = PushConsumer,
                 progress: Callable[[int, int, int], None] | None = None, skip_idle: bool = True) -> None:
        self.scenario = scenario
        self.store_dir = Path(store_dir)
        self.consumer_class = consumer_class
        self.progress = progress
        self.skip_idle = skip_idle
        self.rng = random.Random(scenario.seed)
        self.clock = VirtualClock(START_MS)
        # The broker persists on one cadence; 5 s is RocketMQ's flushConsumerOffsetInterval,
        # which is what decides how much a crash forgets. (An fsync every 500 ms of
        # virtual time would cost real seconds and change nothing a crash here can lose.)
        conf = {"flushIntervalCommitLog": str(SIM_FLUSH_INTERVAL_MS)}
        if scenario.message_delay_level:
            conf["messageDelayLevel"] = scenario.message_delay_level
        if any(g.sql and g.protocol == "4.x" for g in scenario.groups):
            conf["enablePropertyFilter"] = "true"       # (a 4.x consumer's SQL92 subscription needs it)
        # the messages carry user properties only when a group selects by them: the runs
        # of every other scenario stay byte for byte as they were
        self._with_properties = any(g.sql for g in scenario.groups)
        self.config = BrokerConfig.from_properties(conf)
        # The checker takes the two kinds of event it needs as they happen; nothing
        # reads a kept record, so none is kept (and no other kind is built).
        self.config.record_events = False
        # A simulated crash is a process crash: what was handed to the OS survives it,
        # so flushes need not wait for the disk (126 fsyncs, ~40 ms of a W1 run).
        self.config.fsync = False
        # One config per broker, kept across crashes (a write-off outlives a restart). A
        # one-broker run keeps the one config and its store layout.
        self.broker_names = broker_names(scenario.brokers)
        self.member_configs = {name: self.config if i == 0 else
                               self.config.replace(broker_name=name, listen_port=self.config.listen_port + i)
                               for i, name in enumerate(self.broker_names)}
        self.down_brokers: set[str] = set()
        self.cores: list[BrokerCore] = []
        # what the run stored, accounted as it is stored (None: a store that held records
        # before the run, walked at the end instead)
        self.ledger: Ledger | None = None
        self.checker = InvariantChecker(scenario, list(self.config.delay_levels.delays_ms), START_MS)
        self.schedule = _send_schedule(scenario)
        self.next_number = 0
        self.refused_sends = 0
        self.crashes = 0
        self.boots = 0
        self.embedded: EmbeddedBroker | None = None
        self.core: BrokerCore | None = None
        self.consumers: dict[str, list[PushConsumer]] = {}
        self.down_groups: set[str] = set()
        self._stop_events: Callable[[], None] | None = None
        self._wall0 = 0.0
        self._carried_before = 0          # by the hubs of earlier boots
        # Fault actions still to come, (ms after the start, action), in time order: run
        # by whoever moves time past them, a listener's overrun included (``advance_to``).
        self._timeline: list[tuple[int, Callable[[Simulation], None]]] = []
        self._overrunning = 0             # listeners in an overrun on the stack
        # the scenario's fault rules (fault_rules.py), installed on every boot's brokers
        self.rules = RuleBook(scenario.faults, START_MS, scenario.duration_ms) if scenario.faults else None
        self._sending: int | None = None  # the message number a send is under way for
        # Retry copies a client publishes itself (a send-back refused: by a rule, or by a
        # cluster broker whose writes are off) carry a stale CONSUME_START_TIME: the expiry
        # scan's send-backs of those are watched (_noting_expiry). (Not otherwise: a call
        # fewer per send-back.)
        self._copies_by_clients = bool(scenario.faults or scenario.broker_write_off)
        self._expiring: set[int] = set()  # ids of the messages of listener overruns under way

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        self._wall0 = time.perf_counter()
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self._boot()

    def _boot(self) -> None:
        n = self.boots
        self.boots += 1
        self.cores = []
        for i, name in enumerate(self.broker_names):
            where = self.store_dir if i == 0 else self.store_dir / "brokers" / name
            where.mkdir(parents=True, exist_ok=True)
            seed = f"{self.scenario.seed}/broker/{n}" + (f"/{name}" if i else "")
            self.cores.append(BrokerCore.open(where, self.clock, self.member_configs[name], rng=random.Random(seed),
                                              entry_keys=pulsar_entry_keys()))
        self.core = self.cores[0]
        self.embedded = EmbeddedBroker(cores=self.cores, pid=SIM_PID + n, strict=False, skip_idle=self.skip_idle)
        stops = []
        for member in self.cores:
            for t in self.scenario.topics:
                if member.topic_config(t.name) is None:
                    member.create_topic(t.name, t.queues)
            stops.append(member.subscribe_events(      # (a partial: no call of its own, every commit)
                partial(self._on_event, broker=member.config.broker_name),
                kinds=(EventKind.OFFSET_COMMITTED, EventKind.DEAD_LETTERED)
                + ((EventKind.FAULT,) if self.rules is not None else ())))
        if n == 0 and all(lo == hi for lo, hi in (c.commit_log_bounds() for c in self.cores)):
            # A new store: the accounting is kept as records are stored, every boot's (a
            # crash loses none of them), instead of walking the log at the end.
            self.ledger = Ledger()
        if self.ledger is not None:
            for i, member in enumerate(self.cores):
                stops.append(member.add_stored_hook(
                    self.ledger.stored if i == 0 else
                    lambda rec, msg_id, props, part=i: self.ledger.stored(rec, msg_id, props, part)))
        self._stop_events = lambda: [stop() for stop in stops]
        for name in sorted(self.down_brokers):          # down when the process died: still down
            self.embedded.stop_broker(name)
        self.producer = self.embedded.producer(PRODUCER_GROUP, transaction_checker=self._check_transaction)
        self.consumers = {}
        for spec in self.scenario.groups:
            if spec.name not in self.down_groups:
                self._start_group(spec)
        if self.rules is not None:      # (after the clients' start: see RuleBook.suspended)
            self.rules.boot(self.cores, f"{self.scenario.seed}/faults/{n}")
        self._arm_pump()
        self._run_clients(self.embedded.run_until_idle)

    def _start_group(self, spec: GroupSpec) -> None:
        if spec.protocol == "5.x":
            listener = self._pop_listener(spec)
            self.consumers[spec.name] = [PopConsumer(spec, self.embedded, listener, self._held_back(spec)).start()
                                         for _ in range(spec.consumers)]
            return
        if spec.protocol == "pulsar" and spec.retry_letters:
            listener = self._retry_letter_listener(spec)
            moved = self._retry_letter_dead(spec)
            self.consumers[spec.name] = [_retry_letters().RetryLetterConsumer(spec, self.embedded, listener, moved)
                                         .start() for _ in range(spec.consumers)]
            return
        if spec.protocol == "pulsar":
            listener = self._pulsar_listener(spec)
            self.consumers[spec.name] = [
                PulsarConsumer(spec, self.embedded, listener, self._pulsar_dead_letter(spec)).start()
                for _ in range(spec.consumers)]
            return
        made = []
        for i in range(spec.consumers):
            c = self.consumer_class(
                spec.name, self.embedded, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                consume_message_batch_max_size=spec.batch_size, max_reconsume_times=spec.max_reconsume_times,
                consume_timeout=spec.consume_timeout_minutes, instance_name=f"sim{self.boots}-{i}")
            c.subscribe(spec.topic, MessageSelector.by_sql(spec.sql) if spec.sql else "*")
            c.register_message_listener(self._listener(spec), orderly=spec.orderly)
            if self._copies_by_clients and not spec.orderly:
                c.send_message_back = self._noting_expiry(spec, c.send_message_back)
            c.start()
            made.append(c)
        self.consumers[spec.name] = made

    def _noting_expiry(self, spec: GroupSpec, send_back):
        """A consumer's send-back, watched for the expiry scan's (delay level 3) of a copy
        no listener overrun holds. A retry copy the client published itself carries the
        properties of the delivery it retries, CONSUME_START_TIME included (upstream's
        sendMessageBackAsNormalMessage copies them all); its later copies keep that stale
        time, so the scan may send one back as expired while it waits in the process queue,
        and the listener may still get it: a failure at level 3, and a message that may come
        twice."""
        checker = self.checker

        def send_message_back(msg, delay_level=0, broker_name=None):
            if delay_level == EXPIRED_LEVEL and id(msg) not in self._expiring:
                number = int(msg.body[:NUMBER_WIDTH])
                fate = checker.fate_of(spec.name, number, msg)
                if fate is not None:
                    checker.failed(spec, fate, msg, self.clock.now_ms(), expired=True)
                    checker.may_repeat(number)
            return send_back(msg, delay_level, broker_name)
        return send_message_back

    def finish(self) -> SimulationResult:
        """Stop the clients, check what only the end can show, account the store, close it."""
        emb = self.embedded
        for group_consumers in self.consumers.values():
            for c in group_consumers:
                c.shutdown()
        self.producer.shutdown()
        emb.run_until_idle()
        now = self.clock.now_ms()
        dlq = {g.name: emb.messages(_dead_letter_topic(g)) if g.protocol == "pulsar" else emb.dlq_messages(g.name)
               for g in self.scenario.groups}
        self.checker.final_checks(now, dlq)
        if self.checker.transactions:
            self._final_transaction_checks(now)
        for core in self.cores:
            core.flush()
        accounts = store_accounts(self.cores, self.ledger).summary()
        per_group = {g.name: {"dead_lettered": len(dlq[g.name])} for g in self.scenario.groups}
        for (group, topic), stats in self.core.pulsar_cursor_stats().items():
            if group in per_group:          # a Pulsar group: the redeliveries its broker counted
                mine = per_group[group]
                for k, v in stats.items():
                    mine[k] = max(mine.get(k, 0), v) if k.startswith("max_") else mine.get(k, 0) + v
        settled = self.checker.pending == 0 and self.next_number >= self.scenario.messages \
            and not self.halves_waiting
        carried = self.idle_runs_carried
        self._stop_events()
        emb.hub.close()
        for core in self.cores:
            core.close()
        return SimulationResult(
            self.scenario, self.store_dir, now - START_MS, settled, time.perf_counter() - self._wall0,
            self.next_number, self.refused_sends, self.checker.deliveries, self.crashes,
            list(self.checker.violations), accounts, per_group, carried, self._transaction_counts(),
            self.rules.summary() if self.rules is not None else [])

    @property
    def idle_runs_carried(self) -> int:
        skipper = self.embedded.hub.skipper if self.embedded is not None else None
        return self._carried_before + (skipper.carried if skipper is not None else 0)

    # -- the whole run ---------------------------------------------------------------------
    def run(self) -> SimulationResult:
        # A run allocates millions of short-lived objects but makes few reference cycles
        # (about 2,000 objects per 10,000 messages); the cyclic collector's full passes
        # over the live store, client and checker state cost about a tenth of the wall
        # time. So it is paused for the run and resumed as it was after, as timeit does;
        # reference counting still frees everything else at once.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._run()
        finally:
            if collecting:
                gc.enable()

    def _run(self) -> SimulationResult:
        s = self.scenario
        end = s.duration_ms + s.settle_ms
        # Only a fault's end can be past the duration (_timeline leaves out the faults
        # that start after it); it ends on time even while the run settles (a broker
        # left read-only for good could never let it settle).
        self._timeline = [(at, action) for at, action in _timeline(s) if at <= end]
        self.start()
        self.advance_to(max([s.duration_ms] + [at for at, _ in self._timeline]))
        while (self.checker.pending or self.next_number < s.messages or self.halves_waiting) \
                and self.elapsed_ms < end:
            self.advance_to(min(self.elapsed_ms + SETTLE_STEP_MS, end))
        return self.finish()

    @property
    def elapsed_ms(self) -> int:
        return self.clock.now_ms() - START_MS

    def advance(self, ms: int) -> None:
        self.advance_to(self.elapsed_ms + ms)

    def advance_to(self, elapsed_ms: int) -> None:
        """Move virtual time to START + ``elapsed_ms`` (in steps of 10 minutes, so
        progress shows on long runs), running each fault action of the timeline at its
        time on the way. A listener's overrun moves time through here too, so faults
        come at their time while it runs; a crash then kills the process inside the
        listener (``_ProcessDied``). Overruns nest, so the path from here back to a
        listener is kept short (Python's recursion limit)."""
        timeline = self._timeline
        while True:
            item = timeline[0] if timeline and timeline[0][0] <= elapsed_ms else None
            stop = START_MS + (elapsed_ms if item is None else item[0])
            now = self.clock.now_ms()
            if now < stop:
                try:    # the loop is looked up at each step: a crash starts another
                    self.embedded.runtime.advance(min(stop - now, 600_000))
                except _ProcessDied:
                    if self._overrunning:
                        raise
                    self.crash()
                if self.progress:
                    self.progress(self.elapsed_ms, self.scenario.duration_ms, self.next_number)
                continue
            self._run_clients(self.embedded.runtime.run_until_idle)
            if item is None:
                return
            if timeline and timeline[0] is item:        # not run yet by an overrun on the way
                del timeline[0]
                if self._overrunning and item[1] is Simulation.crash:
                    raise _ProcessDied()
                item[1](self)

    def _run_clients(self, run: Callable, *args) -> None:
        """Call into the client loop. When a crash comes while a listener overruns,
        ``_ProcessDied`` unwinds every frame of the dying process (listener, SDK, loop)
        up to the outermost such call, which crashes the process there and then."""
        try:
            run(*args)
        except _ProcessDied:
            if self._overrunning:
                raise
            self.crash()

    # -- faults ----------------------------------------------------------------------------
    def crash(self) -> None:
        """The process dies and starts again from its store (see the module doc)."""
        self.crashes += 1
        self.checker.crashed = True
        self.checker.step += 1
        self._stop_events()
        for core in self.cores:
            core.crash()
        self._carried_before = self.idle_runs_carried
        self.embedded = None
        self.consumers = {}
        self._boot()
        readers = {create_offset_msg_id(core.store_host, 0)[:16]: core.record_bytes_at for core in self.cores}
        self.checker.recovered(readers, self.clock.now_ms())

    def set_writeable(self, writeable: bool, broker: str | None = None) -> None:
        """Switch ``broker``'s write permission (every broker's when None)."""
        self.checker.step += 1
        for name in [broker] if broker else self.broker_names:
            self.embedded.set_writeable(writeable, name)

    def stop_broker(self, name: str) -> None:
        """A broker of the cluster stops: out of every route, its clients' connections
        cut; what its consumers held and had not committed there is delivered again
        (at-least-once, as after a crash)."""
        self.checker.step += 1
        self.checker.crashed = True
        self.down_brokers.add(name)
        self._run_clients(self.embedded.stop_broker, name)

    def start_broker(self, name: str) -> None:
        self.checker.step += 1
        self.down_brokers.discard(name)
        self._run_clients(self.embedded.start_broker, name)

    def stop_group(self, group: str) -> None:
        self.checker.step += 1
        for c in self.consumers.pop(group, []):
            # (a 5.x consumer holds nothing: it answers each delivery at once, or never)
            if any(pq.msg_count for pq in getattr(c, "process_queues", {}).values()) or \
                    getattr(c, "holds_messages", False):
                # A message still in flight (its listener overrunning, its local retry
                # waiting) holds the committed offset: it and whatever followed it are
                # delivered again on restart. At-least-once, as after a crash, so the
                # checker allows the repeated attempts a crash allows.
                self.checker.crashed = True
            c.shutdown()
        self.down_groups.add(group)

    def start_group(self, group: str) -> None:
        self.checker.step += 1
        self.down_groups.discard(group)
        if group not in self.consumers:
            if self.rules is None:
                self._start_group(self.scenario.group(group))
            else:
                with self.rules.suspended():
                    self._start_group(self.scenario.group(group))
        self._run_clients(self.embedded.run_until_idle)

    # -- producing -------------------------------------------------------------------------------
    def send_now(self) -> bool:
        """Send the next message at once, outside the schedule (for step-by-step drivers
        such as a state machine). False when the broker refused it."""
        if not self._send(self.next_number):
            return False
        self.next_number += 1
        return True

    def _arm_pump(self) -> None:
        if self.next_number < self.scenario.messages:
            due = START_MS + self.schedule[self.next_number]
            self.embedded.runtime.call_at(max(due, self.clock.now_ms()), self._pump, self.embedded)

    def _pump(self, owner: EmbeddedBroker) -> None:
        if owner is not self.embedded:       # a timer of a runtime that crashed
            return
        now = self.clock.now_ms()
        total = self.scenario.messages
        while self.next_number < total and START_MS + self.schedule[self.next_number] <= now:
            if not self._send(self.next_number):
                self.embedded.runtime.call_at(now + SEND_RETRY_MS, self._pump, owner)
                return
            self.next_number += 1
        self._arm_pump()

    def _send(self, number: int) -> bool:
        spec = self.scenario.producers[number % len(self.scenario.producers)]
        filler = self.rng.randbytes(spec.body_size - NUMBER_WIDTH - 1).hex()[:spec.body_size - NUMBER_WIDTH - 1]
        body = b"%08d|%s" % (number, filler.encode())
        msg = Message(spec.topic, body, "sim", f"m{number}")        # topic, body, tags, keys
        if self._with_properties:
            msg.properties.update(message_properties(number))
        end = self._draw_transaction_end(spec) if spec.transactional else None
        self._sending = number
        try:
            if end is None:
                res = self.producer.send(msg)
            else:
                res = self.producer.send_message_in_transaction(msg, lambda m, a: _LOCAL_TRANSACTION[end]).send_result
        except MQClientError:
            self.refused_sends += 1
            return False
        finally:
            self._sending = None
        self.checker.step += 1
        mq = res.queue
        self.checker.accepted(number, res.msg_id, res.offset_msg_id, end, self.clock.now_ms(),
                              (mq.topic, mq.queue_id, res.queue_offset, mq.broker_name) if self._with_properties
                              else None)
        return True

    # -- transactions ----------------------------------------------------------------------------
    def _draw_transaction_end(self, spec) -> str:
        rollback, at_check, never = spec.transaction_draws
        draw = self.rng.random()
        if draw < rollback:
            return "rollback"
        if draw < rollback + at_check:
            return "at_check"
        return "never" if draw < rollback + at_check + never else "commit"

    def _check_transaction(self, msg) -> LocalTransactionState:
        """The producer's checker: the broker asks how message n's transaction ended."""
        number = int(msg.body[:NUMBER_WIDTH])
        self.checker.transaction_checked(number, self.clock.now_ms(), self.config.transaction_timeout,
                                         self.config.transaction_check_max)
        return _CHECK_ANSWER.get(self.checker.transactions.get(number, "never"), LocalTransactionState.UNKNOW)

    def _transaction_counts(self) -> dict:
        ends = self.checker.transactions
        if not ends:
            return {}
        out = {end: 0 for end in _LOCAL_TRANSACTION}
        for end in ends.values():
            out[end] += 1
        out["checks"] = sum(len(times) for times in self.checker.checks.values())
        return out

    @property
    def halves_waiting(self) -> int:
        """Half messages waiting for their producer on the running brokers."""
        return sum(core.waiting_transaction_count() for core in self.cores if not core.stopped)

    def _final_transaction_checks(self, now: int) -> None:
        emb = self.embedded
        copies: dict[int, int] = {}
        for topic in sorted({p.topic for p in self.scenario.producers if p.transactional}):
            for m in emb.messages(topic):
                number = int(m.body[:NUMBER_WIDTH])
                if number in self.checker.transactions:
                    copies[number] = copies.get(number, 0) + 1
        discarded = [int(m.body[:NUMBER_WIDTH]) for m in emb.messages(TRANS_CHECK_MAX_TIME_TOPIC)]
        settled = self.checker.pending == 0 and self.next_number >= self.scenario.messages
        self.checker.final_transaction_checks(now, copies, discarded, self.halves_waiting, settled)

    # -- consuming ------------------------------------------------------------------------------
    def _fails(self, spec: GroupSpec, number: int, attempt: int) -> bool:
        if spec.poison_every and number % spec.poison_every == 0:
            return True
        if spec.fail_once_every and number % spec.fail_once_every == spec.fail_once_remainder:
            return attempt == 0
        return spec.fail_probability > 0 and self.rng.random() < spec.fail_probability

    def _listener(self, spec: GroupSpec):
        checker = self.checker
        clock = self.clock
        orderly = spec.orderly
        max_orderly = spec.max_attempts_failed - 1

        delivered = checker.delivered
        failed = checker.failed
        finished = checker.finished
        fails = self._fails
        rng = self.rng
        group = spec.name
        slow = spec.slow_probability

        def on_messages(msgs, ctx):
            now = clock.now_ms()
            mq = ctx.message_queue
            pulled = mq.topic
            if orderly:
                first = msgs[0].queue_offset
                offsets = [m.queue_offset for m in msgs]
                # (a SQL92 group's batch skips the offsets its selector leaves: ascending is in order)
                if (offsets != list(range(first, first + len(msgs))) if not spec.sql
                        else any(a >= b for a, b in zip(offsets, offsets[1:]))):
                    checker.fail("order", now, f"{spec.name}: a batch of {pulled}/{mq.queue_id} is not in "
                                               f"queue order: {[m.queue_offset for m in msgs]}")
                checker.check_order(spec.name, pulled, mq.queue_id, first, now, mq.broker_name)
            # every delivery is checked first, then the listener decides (in order, up
            # to the first failure: the seed's random draws come in that order)
            numbers = [int(m.body[:NUMBER_WIDTH]) for m in msgs]
            fates = [delivered(spec, n, m, pulled, now) for n, m in zip(numbers, msgs)]
            first_fail = None
            for j, m in enumerate(msgs):
                if fails(spec, numbers[j], m.reconsume_times):
                    first_fail = j
                    break
            if not orderly and slow and rng.random() < slow:
                return self._overrun(spec, msgs, numbers, fates, ctx, now, first_fail)
            if orderly:
                return self._settle_orderly(spec, msgs, fates, mq, now, first_fail is None, max_orderly)
            ok_upto = len(msgs) if first_fail is None else first_fail
            for j, m in enumerate(msgs):
                fate = fates[j]
                if fate is not None:
                    if j >= ok_upto:
                        failed(spec, fate, m, now)
                    elif not fate.succeeded:
                        checker.succeeded(spec, numbers[j], fate)
                finished(group, pulled, mq.queue_id, m.queue_offset, now, False, mq.broker_name)
            return _verdict(ctx, first_fail)

        return on_messages

    def _pop_listener(self, spec: GroupSpec):
        """A 5.x group's listener: its verdict is the consumer's answer (ack, a new
        invisible time, or none); a failure comes back after the retry interval of its
        attempt, a hang after the receive's invisible time."""
        invisible_ms = spec.invisible_seconds * 1000
        clock = self.clock

        def retry_delay(d, hangs: bool) -> int:
            delay = invisible_ms if hangs else rocketmq5_retry_interval_ms(d.delivery_attempt)
            if d.faulted:       # handed over late or twice: it is back when its invisible time ends, if not sooner
                delay = min(delay, max(0, d.visible_again_ms - clock.now_ms()))
            return delay

        return self._answering_listener(spec, retry_delay, finish_failed=True)

    def _held_back(self, spec: GroupSpec):
        """A 5.x receive a fault rule delays: its messages are the broker's again when
        their invisible time ends (it may commit past them, and count the attempt), so each
        counts as a delivery left unanswered from the pop on, as a hung one does; the
        listener still checks each when it comes (if the process lives that long)."""
        checker = self.checker
        invisible_ms = spec.invisible_seconds * 1000

        def held_back(deliveries) -> None:
            now = self.clock.now_ms()
            for d in deliveries:
                number = int(d.body[:NUMBER_WIDTH])
                if number < checker.accepted_count and (number not in checker.repeats or
                                                        d.msg_id == checker.uniq[number]):
                    checker.failed(spec, checker.fates[spec.name][number], d, now, delay_ms=invisible_ms)
                checker.finished(spec.name, d.record.topic, d.queue_id, d.queue_offset, now, False)
        return held_back

    def _pulsar_listener(self, spec: GroupSpec):
        """A Pulsar group's listener: its verdict is the consumer's answer (ack, negative
        ack, or none); a failure comes back after the nack delay, a hang after the ack
        timeout. What it failed stays unacknowledged until then."""
        nack_ms, ack_timeout_ms = spec.nack_delay_seconds * 1000, spec.ack_timeout_seconds * 1000
        return self._answering_listener(spec, lambda d, hangs: ack_timeout_ms if hangs else nack_ms,
                                        finish_failed=False)

    def _answering_listener(self, spec: GroupSpec, retry_delay_ms, *, finish_failed: bool):
        """A listener that answers one delivery at a time (5.x, Pulsar): the same checks
        and failure pattern as a 4.x one's. ``retry_delay_ms(delivery, hangs)``: when a
        failed or hung delivery is due back. ``finish_failed``: a failed delivery is done
        with at once (a 5.x retry is another stored copy)."""
        checker = self.checker
        clock = self.clock

        def on_delivery(d) -> str:
            now = clock.now_ms()
            number = int(d.body[:NUMBER_WIDTH])
            fate = checker.delivered(spec, number, d, spec.topic, now)
            failing = self._fails(spec, number, d.reconsume_times)
            hangs = bool(spec.slow_probability) and self.rng.random() < spec.slow_probability
            if finish_failed or not (hangs or failing):
                # finished before the answer: an ack commits the offset at once
                checker.finished(spec.name, d.record.topic, d.queue_id, d.queue_offset, now, False)
            if hangs or failing:
                if fate is not None:
                    checker.failed(spec, fate, d, now, delay_ms=retry_delay_ms(d, hangs))
                return "hang" if hangs else "fail"
            if fate is not None:
                checker.succeeded(spec, number, fate)
            return "ok"

        return on_delivery

    def _retry_letter_listener(self, spec: GroupSpec):
        """A retry-letter group's listener (retry_letters.py): the same checks and failure
        pattern; a failure is a new copy in the retry-letter topic, due after the delay of
        the group's mode, or, after the last retry, a copy in the dead-letter topic."""
        checker = self.checker
        clock = self.clock
        retry_delay_ms = _retry_letters().retry_delay_ms

        def on_copy(d) -> str:
            now = clock.now_ms()
            number = int(d.body[:NUMBER_WIDTH])
            fate = checker.delivered(spec, number, d, d.topic, now)
            # answered at once either way (reconsume_later acks the copy it retries)
            checker.finished(spec.name, d.topic, 0, d.queue_offset, now, False)
            if not self._fails(spec, number, d.reconsume_times):
                if fate is not None:
                    checker.succeeded(spec, number, fate)
                return "ok"
            if fate is not None:
                checker.failed(spec, fate, d, now, delay_ms=retry_delay_ms(spec, d.reconsume_times))
            return "fail"

        return on_copy

    def _retry_letter_dead(self, spec: GroupSpec):
        return lambda d: self.checker.dead_lettered(spec.name, d.msg_id, self.clock.now_ms())

    def _pulsar_dead_letter(self, spec: GroupSpec):
        """The client moved a message to the group's dead-letter topic and is about to ack it."""
        def moved(d) -> None:
            now = self.clock.now_ms()
            self.checker.finished(spec.name, spec.topic, 0, d.queue_offset, now, False)
            self.checker.dead_lettered(spec.name, d.msg_id, now)

        return moved

    def _overrun(self, spec, msgs, numbers, fates, ctx, now, first_fail):
        """A listener that takes longer than consumeTimeout. While it runs, the
        consumer's expiry check sends the batch back (level 3) and drops it from the
        ProcessQueue; a message it could not send back (the broker read-only, say) stays
        in flight, and the listener's own late verdict decides it, as upstream."""
        checker = self.checker
        mq = ctx.message_queue
        pq = self._process_queue(spec.name, mq, msgs[0])
        # Recorded as the expiry will settle it, so its retry (which may come while the
        # listener still runs) is checked against level 3; withdrawn below if it did not.
        expected = []
        for m, fate in zip(msgs, fates):
            if fate is not None:
                expected.append(checker.failed(spec, fate, m, now, expired=True))
            else:
                expected.append(None)
            checker.finished(spec.name, mq.topic, mq.queue_id, m.queue_offset, now, False, mq.broker_name)
        # Two timeout periods: the periodic expiry check runs every consumeTimeout minutes.
        # Meanwhile the world goes on: timers, other listeners, faults at their time.
        self._overrunning += 1
        held = {id(m) for m in msgs}
        self._expiring |= held
        try:
            self.advance_to(self.elapsed_ms + (2 * spec.consume_timeout_minutes + 1) * 60_000)
        finally:
            self._overrunning -= 1
            self._expiring -= held
        late = self.clock.now_ms()
        ok_upto = len(msgs) if first_fail is None else first_fail
        for j, (m, fate) in enumerate(zip(msgs, fates)):
            if fate is None or pq is None or pq.msg_tree.get(m.queue_offset) is not m:
                continue    # the expiry sent it back, as recorded
            fate.withdraw(expected[j])
            if pq.dropped:
                continue    # the queue left this consumer: it is delivered again from the committed offset
            if j < ok_upto:
                checker.succeeded(spec, numbers[j], fate)
            else:
                checker.failed(spec, fate, m, late)
        return _verdict(ctx, first_fail)

    def _process_queue(self, group: str, mq, msg):
        """The ProcessQueue of ``group`` that holds ``msg`` in flight (None: none does)."""
        for c in self.consumers.get(group, ()):
            pq = c.process_queues.get(mq)
            if pq is not None and pq.msg_tree.get(msg.queue_offset) is msg:
                return pq
        return None

    def _settle_orderly(self, spec, msgs, fates, mq, now, success: bool, max_times: int):
        checker = self.checker
        if success:
            for m, fate in zip(msgs, fates):
                if fate is not None:
                    checker.succeeded(spec, int(m.body[:NUMBER_WIDTH]), fate)
                checker.finished(spec.name, mq.topic, mq.queue_id, m.queue_offset, now, True, mq.broker_name)
            return _ORDERLY_OK
        for m, fate in zip(msgs, fates):
            if fate is not None:
                checker.failed(spec, fate, m, now)
        if all(m.reconsume_times >= max_times for m in msgs):
            # the client hands them to the broker's DLQ and moves past them
            for m in msgs:
                checker.finished(spec.name, mq.topic, mq.queue_id, m.queue_offset, now, True, mq.broker_name)
        return _SUSPEND

    # -- what the broker records -------------------------------------------------------------------
    def _on_event(self, e, broker: str) -> None:
        if e.kind == EventKind.OFFSET_COMMITTED:
            self.checker.offset_committed(e.group, e.topic, e.queue_id, e.queue_offset, e.time_ms, broker)
        elif e.kind == EventKind.DEAD_LETTERED:
            group = e.group or e.topic[len(DLQ_PREFIX):]
            self.checker.dead_lettered(group, e.msg_id, e.time_ms)
        elif e.kind == EventKind.FAULT:
            self._fault_applied(e, broker)

    def _fault_applied(self, e, broker: str) -> None:
        """A rule of the scenario acted. One that can make an application see a message
        again tells the checker where: the message being sent (a send stored whose answer
        was lost), else the group of the request (any group when it names none)."""
        i = self.rules.spec_of(broker, e)
        if i is None:
            return
        group = e.group if e.group in self.checker.fates else None
        if self.rules.specs[i].operation == "send_back":
            self.checker.send_back_failed(group)
        spec = self.rules.specs[i]
        if not fault_rules.may_duplicate(spec, self.scenario.group(group).protocol if group is not None else None):
            return
        if spec.operation == "send" and self._sending is not None:
            self.checker.may_repeat(self._sending)
        else:
            self.checker.may_repeat_in(group)


def _dead_letter_topic(spec: GroupSpec) -> str:
    return _retry_letters().dead_letter_topic(spec) if spec.retry_letters else dead_letter_topic(spec)


def _retry_letters():
    """retry_letters.py, which needs the SDK's Pulsar client and so the pulsar extra (a
    base install simulates every other kind of group)."""
    try:
        from . import retry_letters
    except ImportError as exc:
        from rocketmq_emulator.broker.cli.common import extra_not_installed

        raise ScenarioError(f"a retry-letter group {extra_not_installed('pulsar', exc)}") from None
    return retry_letters


def _verdict(ctx, first_fail: int | None) -> ConsumeConcurrentlyStatus:
    """A concurrent listener's answer when its first failing message is ``first_fail``."""
    if first_fail is None:
        return _OK
    if first_fail == 0:
        return _LATER
    ctx.ack_index = first_fail - 1       # ack the ones before, send back the rest
    return _OK


class _ProcessDied(BaseException):
    """A crash on the timeline came while a listener overran: the simulated process
    dies inside the listener. A BaseException, so neither the SDK (which retries a
    listener's Exception) nor the client loop (which logs a task's) stops it."""


def run_simulation(scenario: Scenario, store_dir: str | Path, **kwargs) -> SimulationResult:
    return Simulation(scenario, store_dir, **kwargs).run()


def _send_schedule(s: Scenario) -> list[int]:
    """When message n is due (ms after the start): producer n % P sends its j-th
    message at j / rate; kept non-decreasing so messages go out in number order."""
    out, last = [], 0
    p = len(s.producers)
    for n in range(s.messages):
        spec = s.producers[n % p]
        due = max(last, int((n // p) * 1000 / spec.rate))
        out.append(due)
        last = due
    return out


def _timeline(s: Scenario) -> list[tuple[int, Callable[[Simulation], None]]]:
    """Fault actions in time order (ties: in the order listed here). Faults that start
    after the duration are left out, with their ends, so whatever lies past it is the
    end of a fault (a write-off window's end, a stopped group's return)."""
    items: list[tuple[int, int, Callable]] = []

    def add(at: int, fn: Callable) -> None:
        items.append((at, len(items), fn))

    for t in s.crashes_ms:
        if t <= s.duration_ms:
            add(t, Simulation.crash)
    for w in s.write_off:
        if w.start_ms <= s.duration_ms:
            add(w.start_ms, lambda sim: sim.set_writeable(False))
            add(w.end_ms, lambda sim: sim.set_writeable(True))
    for r in s.consumer_restarts:
        if r.at_ms <= s.duration_ms:
            add(r.at_ms, lambda sim, g=r.group: sim.stop_group(g))
            add(r.at_ms + r.down_ms, lambda sim, g=r.group: sim.start_group(g))
    for w in s.broker_write_off:
        if w.start_ms <= s.duration_ms:
            add(w.start_ms, lambda sim, b=w.broker: sim.set_writeable(False, b))
            add(w.end_ms, lambda sim, b=w.broker: sim.set_writeable(True, b))
    for w in s.broker_down:
        if w.start_ms <= s.duration_ms:
            add(w.start_ms, lambda sim, b=w.broker: sim.stop_broker(b))
            add(w.end_ms, lambda sim, b=w.broker: sim.start_broker(b))
    if s.faults:        # (checked to start within the duration)
        for at, what, i in RuleBook(s.faults, START_MS, s.duration_ms).timeline():
            add(at, (lambda sim, i=i: sim.rules.open_rule(i)) if what == "open" else
                (lambda sim, i=i: sim.rules.close_rule(i)))
    items.sort(key=lambda x: (x[0], x[1]))
    return [(t, fn) for t, _, fn in items]
