"""The simulator's own model of what must hold, checked as the run goes.

It sees what an application sees — each send's result and each delivery to a listener
— plus the broker's offset commits (from the event record), and keeps its own books.
It does not trust the SDK or the broker to say what is right: it computes it.

Invariants (each failure is a Violation with the step, the virtual time and the message):

  lost              every accepted message ends, in every group, consumed successfully
                    or in %DLQ%<group> (checked once the run has settled)
  durable           after every crash and restart, each accepted message is still at the
                    commit-log offset its send result named (its offsetMsgId), with its
                    UNIQ_KEY: nothing acknowledged was lost, and no offset a producer was
                    given went to another message
  attempts          concurrent groups (4.x and 5.x; Pulsar: see below): a dead-lettered message failed in exactly
                    maxReconsumeTimes + 1 copies the broker stored (reconsumeTimes 0..max,
                    each once; after a crash a repeat is allowed — at-least-once — but no
                    level may be missing), and no stored copy above max is delivered.
                    (A copy the client re-delivers itself after a failed send-back is
                    not a new attempt for the broker — upstream counts the same way; but its
                    reconsumeTimes grows with each local retry, so a copy the client then
                    publishes itself at maxReconsumeTimes is dead-lettered with fewer
                    stored copies, as upstream's is.)
  retry_delay       a retry arrives no earlier than its delay level after the failure
                    (level 3 + reconsumeTimes; level 3 when it expired; 5 s when the
                    send-back failed and the client retried locally); 5.x: no earlier
                    than the invisible time the failure left it (the retry interval of
                    its attempt; the receive's invisible time when never answered)
  commit            a committed offset never passes a message its group has not
                    finished with (consumed, or handed back to the broker)
  identity          every copy keeps the UNIQ_KEY of its original, and a retry or DLQ
                    copy carries ORIGIN_MESSAGE_ID = the original's offsetMsgId
  filter            a group with a SQL92 selector (GroupSpec.sql) gets only the messages
                    whose properties (scenario.message_properties) it takes, and "lost"
                    counts only those for it
  order             an orderly group gets a queue's messages in queue order: nothing
                    after an unfinished message
  duplicate         a message its group has consumed successfully is not delivered to it
                    again, unless a crash came (at-least-once) or a fault rule that can
                    make duplicates acted: a send stored whose answer was lost (that
                    message may come twice, and a copy stored under another UNIQ_KEY
                    before the producer's own retry is not counted), or a duplicated
                    pull, a lost offset commit, a late send-back, a heartbeat or route
                    fault for that group (fault_rules.may_duplicate). Any other duplicate
                    is a violation.
  transaction       a transactional producer's committed message (by its local
                    transaction or at a check-back) is stored in its topic exactly once and
                    consumed like any other; a rolled-back or never-answered one is never
                    delivered, and a never-answered one ends in TRANS_CHECK_MAX_TIME_TOPIC
                    (once); a check-back comes no earlier than transactionTimeOut after its
                    half message, at most transactionCheckMax times; no half message is
                    left waiting once the run settled. (A committed message's retries
                    name the committed copy in ORIGIN_MESSAGE_ID, not the half message
                    the producer was told of: the identity check learns it from the
                    first delivery.)

A Pulsar group's retries are the same stored message delivered again with its
redelivery count (``reconsume_times`` here), not new copies: its dead letters must have
failed at counts 0..max_redeliver_count, each exactly once (again: after a crash or a
consumer restart a count may repeat), no delivery above the maximum reaches the
listener, and a redelivery comes no earlier than the nack delay or ack timeout its
failure left it (``delay_ms``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rocketmq_emulator.broker.rocketmq_model.sql_filter import compile_sql
from rocketmq_emulator.store.records import create_offset_msg_id

from ..message import MessageExt
from .scenario import GroupSpec, Scenario, message_properties

__all__ = ["Violation", "InvariantChecker", "LOCAL_RETRY_MS", "EXPIRED_LEVEL"]

LOCAL_RETRY_MS = 5000        # the client's own retry when a send-back fails
FIRST_BROKER = "broker-a"    # the broker of a one-broker run, and of the 5.x and Pulsar groups
EXPIRED_LEVEL = 3            # cleanExpiredMsg sends back with delay level 3


@dataclass(frozen=True)
class Violation:
    invariant: str
    step: int
    time_ms: int
    message: str

    def __str__(self) -> str:
        return f"[{self.invariant}] step {self.step} at +{self.time_ms / 1000:.3f}s: {self.message}"

    def to_dict(self) -> dict:
        return {"invariant": self.invariant, "step": self.step, "time_ms": self.time_ms, "message": self.message}


# What tells one stored copy from another: its broker and commit-log offset (the offsets
# of two brokers' logs repeat): (getattr(msg, "store_host", None), msg.commit_log_offset).


class _Fate:
    """One message in one group. ``failures``: one (reconsumeTimes, time, commit-log
    offset of the copy, delay its retry waits) per failed delivery; after a crash one
    attempt may fail twice (two lineages). One is made per message and group, and most
    never fail: they share an empty tuple until their first failure. ``copies`` counts
    the failures of each copy and ``by_attempt`` holds the failures (one, or a list) per
    reconsumeTimes: what a delivery is checked against, without a scan."""

    __slots__ = ("failures", "succeeded", "dead", "copies", "by_attempt")

    def __init__(self) -> None:
        self.failures: list[tuple[int, int, int, int]] | tuple = ()
        self.succeeded = False
        self.dead = False

    @property
    def failed(self) -> list[int]:
        return [f[0] for f in self.failures]

    def add_failure(self, entry: tuple) -> None:
        k, t, copy, delay = entry
        if not self.failures:
            self.failures = []
            self.copies = {}
            self.by_attempt = {}
        self.failures.append(entry)
        copies, by_attempt = self.copies, self.by_attempt       # (``in`` and ``[]``: every failure)
        copies[copy] = copies[copy] + 1 if copy in copies else 1
        # the entry itself, a list of entries only when one attempt failed twice (after a
        # crash): a poison ladder keeps 16 of these for every message
        if k not in by_attempt:
            by_attempt[k] = entry
        elif by_attempt[k].__class__ is tuple:
            by_attempt[k] = [by_attempt[k], entry]
        else:
            by_attempt[k].append(entry)

    def withdraw(self, entry: tuple) -> None:
        """Take back a failure recorded before (a delivery that turned out otherwise)."""
        k, t, copy, delay = entry
        self.failures.remove(entry)
        left = self.copies[copy] - 1
        if left:
            self.copies[copy] = left
        else:
            del self.copies[copy]
        same = self.by_attempt[k]
        if same.__class__ is tuple:
            del self.by_attempt[k]
        else:
            same.remove(entry)
            if len(same) == 1:
                self.by_attempt[k] = same[0]


@dataclass
class _QueueBook:
    """Per (group, pulled topic, queue): which offsets the group is finished with."""
    finished: set = field(default_factory=set)
    low: int = 0                                         # smallest offset not finished

    def finish(self, offset: int) -> None:
        self.finished.add(offset)
        while self.low in self.finished:
            self.finished.discard(self.low)
            self.low += 1


class InvariantChecker:
    def __init__(self, scenario: Scenario, delays_ms: list[int], start_ms: int) -> None:
        self.scenario = scenario
        self.delays_ms = delays_ms                       # index = level - 1
        self.start_ms = start_ms
        self.step = 0
        self.violations: list[Violation] = []
        self.crashed = False
        self.uniq: list[str] = []                        # message number -> UNIQ_KEY
        self.offset_id: list[str] = []                   # message number -> offsetMsgId
        # message number -> the offsetMsgId its retries name as ORIGIN_MESSAGE_ID (a
        # transaction's committed copy: None until its first delivery shows it)
        self.origin_id: list[str | None] = []
        # transactional messages: number -> its drawn end ("commit", "rollback",
        # "at_check", "never"); numbers no group may ever get; check-back times
        self.transactions: dict[int, str] = {}
        self.undeliverable: set[int] = set()
        self.checks: dict[int, list[int]] = {}
        self.sent_ms: dict[int, int] = {}
        self.by_uniq: dict[str, int] = {}
        self.fates: dict[str, list[_Fate]] = {g.name: [] for g in scenario.groups}
        self.queues: dict[tuple[str, str, int], _QueueBook] = {}
        self.pending = 0                                 # (group, message) pairs not yet ended
        self.deliveries = 0
        self.accepted_count = 0
        self.max_failed = {g.name: g.max_attempts_failed for g in scenario.groups}
        self.levels = len(delays_ms)
        # what fault rules allow to come again (``may_repeat``, ``may_repeat_in``): message
        # numbers, groups (None: every group); copies stored by a send whose producer was
        # told it failed, by UNIQ_KEY (not accounted: the producer sent the number again)
        self.repeats: set[int] = set()
        self.repeating_groups: set[str | None] = set()
        self.strays: dict[str, int] = {}
        self.send_back_faulted: set[str | None] = set()   # groups whose send-backs a rule refused or lost
        # groups with a SQL92 selector: theirs, and the message numbers it does not take
        # (computed here from message_properties, not asked of the broker)
        self.selectors = {g.name: compile_sql(g.sql) for g in scenario.groups if g.sql}
        self.not_for: dict[str, set[int]] = {name: set() for name in self.selectors}

    # -- reporting ---------------------------------------------------------------------
    def fail(self, invariant: str, now_ms: int, message: str) -> None:
        self.violations.append(Violation(invariant, self.step, now_ms - self.start_ms, message))

    # -- what the application sees ----------------------------------------------------------
    def accepted(self, number: int, uniq_key: str, offset_msg_id: str, transaction: str | None = None,
                 now_ms: int = 0, stored_at: tuple | None = None) -> None:
        """A send the broker stored; ``transaction``: a transactional one's drawn end (its
        offsetMsgId is then the half message's). ``stored_at`` (topic, queue id, queue
        offset, broker), with SQL92 groups: a group whose selector does not take the
        message is finished with it at once (its commits may pass it)."""
        assert number == len(self.uniq)
        self.accepted_count += 1
        self.uniq.append(uniq_key)
        self.offset_id.append(offset_msg_id)
        self.by_uniq[uniq_key] = number
        for fates in self.fates.values():
            fates.append(_Fate())
        wanted = len(self.fates)
        if self.selectors:
            props = message_properties(number)
            for name, selector in self.selectors.items():
                if not selector.matches(props):
                    self.not_for[name].add(number)
                    wanted -= 1
                    topic, queue_id, queue_offset, broker = stored_at
                    self.finished(name, topic, queue_id, queue_offset, now_ms, False, broker)
        if transaction is None:
            self.origin_id.append(offset_msg_id)
            self.pending += wanted
            return
        self.origin_id.append(None)
        self.transactions[number] = transaction
        self.sent_ms[number] = now_ms
        if transaction in ("rollback", "never"):
            self.undeliverable.add(number)
        else:
            self.pending += wanted

    def transaction_checked(self, number: int, now_ms: int, timeout_ms: int, check_max: int) -> None:
        """The broker checked back message ``number``'s transaction."""
        self.step += 1
        if number not in self.transactions:
            self.fail("transaction", now_ms, f"a check-back of message #{number}, which was not sent in a "
                                             f"transaction")
            return
        times = self.checks.setdefault(number, [])
        times.append(now_ms)
        if now_ms - self.sent_ms[number] < timeout_ms:
            self.fail("transaction", now_ms, f"message #{number} was checked back {now_ms - self.sent_ms[number]} "
                                             f"ms after its half message, before transactionTimeOut {timeout_ms} ms")
        if len(times) > check_max and not self.crashed:
            self.fail("transaction", now_ms, f"message #{number} was checked back {len(times)} times, more than "
                                             f"transactionCheckMax {check_max}")

    def may_repeat(self, number: int) -> None:
        """A fault rule stored message ``number`` and lost the answer: it may come twice."""
        self.repeats.add(number)

    def may_repeat_in(self, group: str | None) -> None:
        """A fault rule may make ``group`` (None: any group) see a consumed message again."""
        self.repeating_groups.add(group)

    def send_back_failed(self, group: str | None) -> None:
        """A fault rule refused, lost or delayed a send-back of ``group`` (None: any group)."""
        self.send_back_faulted.add(group)

    def fate_of(self, group: str, number: int, msg) -> _Fate | None:
        """Message ``number``'s fate in ``group`` (None: not accepted yet, or a stray copy)."""
        if number >= self.accepted_count:
            return None
        props = msg.properties
        msg_id = (props["UNIQ_KEY"] if "UNIQ_KEY" in props else None) or msg.offset_msg_id
        return self.fates[group][number] if msg_id == self.uniq[number] else None

    def may_come_again(self, group: str, number: int) -> bool:
        """Whether a fault rule allows ``group`` to see message ``number`` again (and so
        to fail one attempt in two copies)."""
        return number in self.repeats or group in self.repeating_groups or None in self.repeating_groups

    def delivered(self, spec: GroupSpec, number: int, msg, pulled_topic: str, now_ms: int) -> _Fate | None:
        """A delivery of message ``number`` to ``spec``'s listener: identity, delay,
        attempt and duplicate checks. Returns its fate (None for a number never accepted,
        or a stray copy a fault stored). (It runs for every delivery: look-ups, no scans.)"""
        self.step += 1
        self.deliveries += 1
        props = msg.properties
        # (here and below ``in`` and ``[]`` rather than ``get``: a call fewer each, every delivery)
        if msg.__class__ is MessageExt:     # (its msg_id, inlined: a 4.x client's message)
            msg_id = (props["UNIQ_KEY"] if "UNIQ_KEY" in props else None) or msg.offset_msg_id
        else:
            msg_id = msg.msg_id
        if self.repeats and number in self.repeats and (number >= self.accepted_count or msg_id != self.uniq[number]):
            self.strays[msg_id] = number        # stored by a send its producer was told failed
            return None
        if number >= self.accepted_count:
            self.fail("lost", now_ms, f"{spec.name} got message #{number}, which no send accepted")
            return None
        if self.not_for and spec.name in self.not_for and number in self.not_for[spec.name]:
            self.fail("filter", now_ms, f"{spec.name} got message #{number} {message_properties(number)}, which its "
                                        f"SQL92 selector {spec.sql!r} does not take")
        fate = self.fates[spec.name][number]
        if fate.succeeded and not self.crashed and number not in self.repeats \
                and spec.name not in self.repeating_groups and None not in self.repeating_groups:
            self.fail("duplicate", now_ms, f"{spec.name}: message #{number} delivered again (reconsumeTimes "
                                           f"{msg.reconsume_times}) after it was consumed, with no crash and no "
                                           f"fault rule that makes duplicates")
        k = msg.reconsume_times
        if self.transactions and number in self.transactions:
            if number in self.undeliverable:
                self.fail("transaction", now_ms, f"{spec.name} got message #{number}, whose transaction "
                                                 f"{'was rolled back' if self.transactions[number] == 'rollback' else 'was never committed'}")
            elif k == 0 and self.origin_id[number] is None and getattr(msg, "store_host", None) is not None:
                self.origin_id[number] = create_offset_msg_id(msg.store_host, msg.commit_log_offset)
        if msg_id != self.uniq[number]:
            self.fail("identity", now_ms, f"{spec.name}: message #{number} arrived with UNIQ_KEY {msg_id}, "
                                          f"sent as {self.uniq[number]}")
        if not spec.orderly:
            failures = fate.failures           # empty for most deliveries: skip the checks against them
            # (Pulsar negative acks: every delivery is of the one stored message; Pulsar retry
            # letters are copies, but their ORIGIN_MESSAGE_ID is a Pulsar message id)
            pulsar = spec.protocol == "pulsar"
            redelivered = pulsar and not spec.retry_letters
            # (_copy_of, inlined; a 4.x client's message has a store host, not every message has)
            copy = (msg.store_host if msg.__class__ is MessageExt else getattr(msg, "store_host", None),
                    msg.commit_log_offset)
            fresh_copy = redelivered or not failures or copy not in fate.copies
            if k > 0 and fresh_copy and not pulsar and number not in self.repeats:
                origin = props["ORIGIN_MESSAGE_ID"] if "ORIGIN_MESSAGE_ID" in props else None
                # (a transactional message's is its committed copy's id, known at its first delivery)
                expected = self.origin_id[number]
                # (or its UNIQ_KEY: a copy the client published itself when its send-back was
                # refused names msg.getMsgId(), as upstream's sendMessageBackAsNormalMessage does)
                if expected is not None and origin != expected and origin != self.uniq[number]:
                    self.fail("identity", now_ms, f"{spec.name}: retry {k} of message #{number} carries "
                                                  f"ORIGIN_MESSAGE_ID {origin}, expected {expected}")
            max_failed = self.max_failed[spec.name]
            if k > max_failed - 1 and fresh_copy:
                self.fail("attempts", now_ms, f"{spec.name}: message #{number} delivered with reconsumeTimes {k}, "
                                              f"above maxReconsumeTimes {max_failed - 1}")
            previous = fate.by_attempt[k - 1] if k > 0 and failures and k - 1 in fate.by_attempt else None
            if previous is not None:
                if previous.__class__ is tuple:     # (one failure of that attempt: the usual case)
                    previous = (previous,)
                # The same copy again means its send-back failed and the client retried it
                # locally (5 s); a new copy came through the broker's delay level.
                for _, t, phys, delay in previous:
                    if now_ms - t >= (LOCAL_RETRY_MS if phys == copy and not redelivered else delay):
                        break
                else:
                    _, t, phys, delay = previous[0]
                    due = LOCAL_RETRY_MS if phys == copy and not redelivered else delay
                    self.fail("retry_delay", now_ms, f"{spec.name}: retry {k} of message #{number} came "
                                                     f"{now_ms - t} ms after its failure; it is due after {due} ms")
        return fate

    def failed(self, spec: GroupSpec, fate: _Fate, msg, now_ms: int, *, expired: bool = False,
               delay_ms: int | None = None) -> tuple:
        """A delivery that failed (the listener said so, or it overran consumeTimeout).
        Its retry is due after its delay level, or after ``delay_ms`` when given (5.x:
        the invisible time the failure left it). Returns what was recorded."""
        k = msg.reconsume_times
        if delay_ms is None:
            level = EXPIRED_LEVEL if expired else 3 + k
            levels = self.levels
            delay = self.delays_ms[(level if level < levels else levels) - 1]
        else:
            delay = delay_ms
        entry = (k, now_ms, (msg.store_host if msg.__class__ is MessageExt else getattr(msg, "store_host", None),
                             msg.commit_log_offset), delay)
        fate.add_failure(entry)
        return entry

    def succeeded(self, spec: GroupSpec, number: int, fate: _Fate) -> None:
        if not fate.succeeded and not fate.dead:
            self.pending -= 1
        fate.succeeded = True

    def finished(self, group: str, pulled_topic: str, queue_id: int, queue_offset: int, now_ms: int,
                 orderly: bool, broker: str = FIRST_BROKER) -> None:
        key = (group, pulled_topic, queue_id, broker)
        queues = self.queues
        if key in queues:
            book = queues[key]
        else:
            book = queues[key] = _QueueBook()
        if orderly and queue_offset > book.low:
            self.fail("order", now_ms, f"{group}: {pulled_topic}/{queue_id} offset {queue_offset} was consumed "
                                       f"before offset {book.low}")
        if queue_offset == book.low and not book.finished:
            book.low += 1                       # (finish, in order: the usual case)
        else:
            book.finish(queue_offset)

    def check_order(self, group: str, pulled_topic: str, queue_id: int, queue_offset: int, now_ms: int,
                    broker: str = FIRST_BROKER) -> None:
        book = self.queues.setdefault((group, pulled_topic, queue_id, broker), _QueueBook())
        if queue_offset > book.low:
            self.fail("order", now_ms, f"{group}: {pulled_topic}/{queue_id} delivered offset {queue_offset} "
                                       f"while offset {book.low} is not consumed yet")

    def recovered(self, readers: dict, now_ms: int) -> None:
        """After a crash and restart: every accepted message is where its send result
        said it was stored (the broker and offset inside its offsetMsgId), with its
        UNIQ_KEY (looked for as the property's bytes: a 32-hex-digit id found nowhere
        else). ``readers``: by the first 16 hex digits of a broker's offsetMsgIds (its
        address), that broker's ``record_bytes_at`` (the raw record at a commit-log
        offset, None where none starts)."""
        self.step += 1
        for number, (uniq, offset_id) in enumerate(zip(self.uniq, self.offset_id)):
            phys = int(offset_id[-16:], 16)
            read = readers.get(offset_id[:16])
            raw = read(phys) if read is not None else None
            if raw is None or b"UNIQ_KEY\x01" + uniq.encode() not in raw:
                what = "is gone" if raw is None else "holds another message"
                self.fail("durable", now_ms, f"message #{number} ({uniq}) was accepted at offset {phys} "
                                             f"(offsetMsgId {offset_id}); after the restart that offset {what}")

    # -- what the broker records --------------------------------------------------------------
    def offset_committed(self, group: str, topic: str, queue_id: int, offset: int, now_ms: int,
                         broker: str = FIRST_BROKER) -> None:
        if group not in self.fates:
            return
        key = (group, topic, queue_id, broker)
        queues = self.queues
        if key in queues:
            book = queues[key]
        else:
            book = queues[key] = _QueueBook()
        if offset > book.low:
            where = "" if broker == FIRST_BROKER else f" on {broker}"
            self.fail("commit", now_ms, f"{group} committed {topic}/{queue_id}{where} offset {offset}, but offset "
                                        f"{book.low} is not consumed yet")

    def dead_lettered(self, group: str, uniq_key: str | None, now_ms: int) -> None:
        if group not in self.fates:
            return
        number = self.by_uniq.get(uniq_key or "")
        if number is None:
            if uniq_key in self.strays:
                return                          # a stray copy a fault stored: not accounted
            self.fail("identity", now_ms, f"a message with UNIQ_KEY {uniq_key} reached %DLQ%{group}, "
                                          f"but no send produced it")
            return
        fate = self.fates[group][number]
        if not fate.succeeded and not fate.dead:
            self.pending -= 1
        fate.dead = True

    # -- at the end ----------------------------------------------------------------------------
    def final_checks(self, now_ms: int, dlq_records: dict[str, list]) -> None:
        """Once settled: every message ended in every group; DLQ copies and attempts."""
        self.step += 1
        for spec in self.scenario.groups:
            fates = self.fates[spec.name]
            not_for = self.not_for.get(spec.name, ())
            for number, fate in enumerate(fates):
                if number in self.undeliverable or number in not_for:
                    continue
                if not fate.succeeded and not fate.dead:
                    self.fail("lost", now_ms, f"{spec.name}: message #{number} ({self.uniq[number]}) was accepted "
                                              f"but never consumed nor dead-lettered")
                if fate.dead and not spec.orderly and not (fate.succeeded and self.may_come_again(spec.name, number)):
                    # (a consumed message whose acks a rule lost may be dead-lettered by a 5.x broker)
                    self._check_attempts(spec, number, fate, now_ms)
            for rec in dlq_records.get(spec.name, []):
                number = self.by_uniq.get(rec.properties.get("UNIQ_KEY", ""))
                if number is None and rec.properties.get("UNIQ_KEY", "") in self.strays:
                    continue
                if number is None:
                    self.fail("identity", now_ms, f"%DLQ%{spec.name} holds a copy without a known UNIQ_KEY")
                    continue
                origin = rec.properties.get("ORIGIN_MESSAGE_ID")
                expected = self.origin_id[number]
                if not spec.orderly and expected is not None and origin not in (expected, self.uniq[number]) \
                        and number not in self.repeats:
                    self.fail("identity", now_ms, f"%DLQ%{spec.name}: message #{number} has ORIGIN_MESSAGE_ID "
                                                  f"{origin}, expected {expected}")

    def final_transaction_checks(self, now_ms: int, topic_copies: dict[int, int], discarded: list[int],
                                 waiting: int, settled: bool) -> None:
        """Once the run ended: ``topic_copies`` (message number -> copies of it stored in
        its topic), ``discarded`` (the numbers in TRANS_CHECK_MAX_TIME_TOPIC), ``waiting``
        (half messages still waiting on the brokers)."""
        self.step += 1
        gone = {}
        for number in discarded:
            gone[number] = gone.get(number, 0) + 1
        for number, end in sorted(self.transactions.items()):
            copies = topic_copies.get(number, 0)
            if end in ("commit", "at_check") and copies != 1:
                self.fail("transaction", now_ms, f"message #{number} was committed ({end}) but its topic holds "
                                                 f"{copies} copies of it, not 1")
            elif end in ("rollback", "never") and copies:
                self.fail("transaction", now_ms, f"message #{number} ({end}) was never committed but its topic "
                                                 f"holds {copies} copies of it")
            if settled and end == "never" and gone.get(number, 0) != 1:
                self.fail("transaction", now_ms, f"message #{number} was never answered; TRANS_CHECK_MAX_TIME_TOPIC "
                                                 f"holds {gone.get(number, 0)} copies of it, not 1")
            if end != "never" and gone.get(number):
                self.fail("transaction", now_ms, f"message #{number} ({end}) was discarded into "
                                                 f"TRANS_CHECK_MAX_TIME_TOPIC")
        if settled and waiting:
            self.fail("transaction", now_ms, f"{waiting} half message(s) still wait for their producer after the "
                                             f"run settled")

    def _check_attempts(self, spec: GroupSpec, number: int, fate: _Fate, now_ms: int) -> None:
        """Count copies, not deliveries: when a send-back fails the client re-delivers
        the same copy locally with reconsumeTimes + 1, but the broker goes on counting
        from the copy it stored (upstream does the same), so those repeats are extra."""
        want = spec.max_attempts_failed
        if spec.protocol == "pulsar" and not spec.retry_letters:    # one stored message, its redelivery counts
            counts = [k for k, _, _, _ in fate.failures]
            if sorted(set(counts)) != list(range(want)) or (not self.crashed and len(counts) != want
                                                            and not self.may_come_again(spec.name, number)):
                self.fail("attempts", now_ms, f"{spec.name}: message #{number} was dead-lettered after failed "
                                              f"deliveries with redelivery counts {sorted(counts)}, expected "
                                              f"0..{want - 1} once each")
            return
        copies: dict = {}                                # copy (broker, commit-log offset) -> stored reconsumeTimes
        for k, _, phys, _ in fate.failures:
            copies[phys] = min(k, copies.get(phys, k))
        levels = sorted(set(copies.values()))
        # A copy whose send-back and whose own publication both failed is retried by the
        # client locally, each time with reconsumeTimes + 1 (upstream's processConsumeResult),
        # and a copy it publishes next carries that count, while a send-back that works
        # again counts from the stored copy: every reconsumeTimes up to the end is reached,
        # by a stored copy or a local retry, and the local count may pass the end before
        # the broker's own count dead-letters it (as upstream's does).
        local = any(k > copies[phys] for k, _, phys, _ in fate.failures)
        if local:
            reached = sorted({k for k, _, _, _ in fate.failures})
            if reached == list(range(len(reached))):
                levels = reached[:want]          # (what it reached past the end is the client's own)
        # A send-back a rule refused or lost: the client publishes the retry copy itself with
        # RECONSUME_TIME = reconsumeTimes + 1, and the broker dead-letters a copy sent with
        # RECONSUME_TIME >= max at once (SendMessageProcessor's handleRetryAndDLQ), where its
        # own send-back would have stored one more retry: upstream's count is one short then.
        fallback = self.send_back_faulted and (spec.name in self.send_back_faulted
                                               or None in self.send_back_faulted)
        if fallback and levels == list(range(want - 1)):
            want -= 1
        if levels != list(range(want)):
            self.fail("attempts", now_ms, f"{spec.name}: message #{number} was dead-lettered after failed "
                                          f"copies of reconsumeTimes {levels}, expected 0..{want - 1}")
        elif not local and not self.crashed and len(copies) != want and not self.may_come_again(spec.name, number):
            self.fail("attempts", now_ms, f"{spec.name}: message #{number} was dead-lettered after "
                                          f"{len(copies)} failed copies, expected exactly {want}")
