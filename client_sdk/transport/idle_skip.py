"""Skipping idle spans on a virtual clock (in-process brokers only).

Why. Hours of virtual time with nothing in flight still cost the clients' periodic
work: each queue's long-poll pull expiring every 15 s and sent again, every queue's
offset sent every 5 s, heartbeats and route polls every 30 s, rebalances and orderly
lock renewals every 20 s. Run request by request that is about 6,000 requests per
consumer and idle hour — most of a second of wall time for six hours in which nothing
happens. Once the system is *settled*, each of those requests changes nothing but a
timestamp, so ``advance`` carries them forward instead of running them.

Settled means, checked against the broker core before every skip:
- no task is queued, no reply waits to be routed, and no observer or injected fault is
  attached to the hub (it would see, or change, the requests), and no fault rule on the
  broker could be about a pull, commit, heartbeat or route of its topics and groups;
- every held pull, re-run now without suspension, answers PULL_NOT_FOUND at the offset
  it asks for; its consumer's queue holds no messages, its in-memory offset is not below
  the pull's, and the broker already has the offset the re-sent pull would commit — so
  the pull sent again at the timeout is the same pull, held again;
- each periodic job due in the span would change nothing if run now: offsets equal to
  the broker's, a heartbeat registering exactly what is registered, routes equal to the
  cached ones, a rebalance allocating the queues already held, lock renewals of locks
  this client holds, a consume-timeout scan of empty queues.
Everything else with a deadline — a delayed message falling due, a flush, a producer's
next send, a retry or back-off timer, a pull that fails the checks — is a hard
deadline: a skip stops short of it, and the loop runs it (and the rest of that
instant) normally.

What a skip does. For each job and held pull due before the limit it works out when
it would have run last (L) and applies what that run leaves behind: the job's next due;
the pull re-sent (the same request, a new id: a command with a new opaque, or a typed
pull with a new HeldCall) and held until L + suspend, its reply timer
re-armed, ``last_pull_timestamp`` = L; lock timestamps = L. The broker learns of it only
through its typed operations, each told the time L it stands for: the held pull withdrawn
and the pull sent again (``pull_or_hold``), the locks renewed (``lock_queues``); every
check before is a typed question of the core. Timers and holds are re-armed
in the order the loop would have armed them — by L, jobs before pull replies (the loop
moves due timers before it runs the replies' callbacks), then by how they were ordered
before — so later ties between equal deadlines break as they would have. A run with
skipping writes the same commit log, offsets and delivery times as one without
(tests/client_sdk/test_idle_skip.py compares them).
"""
from __future__ import annotations

import heapq
import json
from dataclasses import dataclass
from typing import Any, Protocol

from rocketmq_emulator.broker.rocketmq_model.long_polling import HeldPull
from rocketmq_emulator.broker.fronts.remoting.protocol.typed import pull_request_of, route_data
from rocketmq_emulator.broker.operations import PullOutcome, PullRequest
from rocketmq_emulator.broker.fronts.remoting.protocol.fastjson import loads_fastjson
from rocketmq_emulator.delay_scheduler.timer_heap import ascending

from ..api import BrokerAPI, registration_of
from ..message import MessageQueue
from ..offset_store import RemoteBrokerOffsetStore
from ..service import ServiceState
from ..rebalance import allocate_averagely
from ..route import TopicRoute
from ..runtime import Timer
from .held_calls import HeldCall, next_typed_id
from .typed_faults import without_commit


__all__ = ["IdleSkipper", "SkippedHub"]


class SkippedHub(Protocol):
    """What idle skipping reads of the in-process hub it runs for (InProcessBroker)."""

    core: object                          # the BrokerCore
    front: object                         # its 4.x front (requests not yet answered)
    runtime: object                       # the clients' ClientRuntime
    watched: bool                         # an observer or injected fault sees every command

    def transport_of(self, channel) -> object: ...

MIN_CARRY = 4      # fewer settled runs than this before the limit: not worth the checks


@dataclass(slots=True)
class _Cycle:
    """A held pull that would expire and be sent again, unchanged, until the limit."""
    held: HeldPull
    transport: Any
    pull: Any                 # the consumer's _PullRequest
    request: Any              # the pull as it would be sent again (a PullRequest, or a command)
    sent: Any                 # the core's PullRequest of it (with its commit), as the front reads it
    suspend_ms: int           # the suspend time it asks for
    period_ms: int            # the re-sent pull's hold time
    last_ms: int = 0


class IdleSkipper:
    """``skipper(limit_ms)``: carry settled work due before ``limit_ms`` forward.
    ``carried`` counts the job runs and pull round trips not executed."""

    def __init__(self, hub: "SkippedHub") -> None:
        self.hub = hub
        self.routes = _RouteReader()
        self.carried = 0
        self.skips = 0

    def __call__(self, limit: int) -> None:
        hub = self.hub
        rt = hub.runtime
        core = hub.core
        if rt._ready or hub.watched or hub.front.outgoing:
            return
        if core.faults_active and core.fault_rules_touch_periodic_work():     # (every loop turn: the attribute first)
            return
        for source in rt._sources:      # the core's own deadlines, and any other time source's
            hard = core.next_deadline(holds=False) if source is hub else source.next_deadline()
            if hard is not None and hard < limit:
                limit = hard
        # Nothing a skip carries (a timer, a held pull's timeout) comes before the limit:
        # nothing to do, and nothing more is looked at (most loop turns end here).
        timers = rt._timers
        while timers and timers[0][2].cancelled:        # (what the runtime's next_deadline drops too)
            heapq.heappop(timers)
        if not timers or timers[0][0] >= limit:
            held = core.next_held_pull_deadline()
            if held is None or held >= limit:
                return
        now = rt.clock.now_ms()
        # The first ordinary timer bounds the span before anything costly is checked.
        timers = []
        for entry in ascending(rt._timers, limit):
            t = entry[2]
            if t.cancelled:
                continue
            if t.quiet is None:
                limit = entry[0]
                break
            timers.append(entry)
        if limit <= now + 1:
            return
        waiting = core.held_pulls_until(limit)
        if len(waiting) + sum(1 for e in timers if e[2].interval) < MIN_CARRY:
            return
        instances = {c.transport: c for c in rt.clients}
        if len(instances) != len(rt.clients) or any(getattr(t, "hub", None) is not hub for t in instances):
            return   # a client on another transport: nothing here can vouch for it

        cycles: dict[int, _Cycle] = {}
        for held in waiting:
            cycle = self._cycle(held, instances)
            if cycle is None:
                limit = held.deadline_ms
                break
            cycles[held.context.opaque] = cycle

        jobs: list[tuple[int, int, Timer]] = []
        settled: dict[tuple[str, int], bool] = {}
        for due, seq, t in timers:
            if due >= limit:
                break
            kind = t.quiet[0] if t.quiet else None
            if kind == "reply":
                cycle = cycles.get(_reply_id(t))
                ok = cycle is not None and cycle.transport is t.quiet[1] and cycle.held.deadline_ms < due
            elif kind is not None and t.interval is not None:
                key = (kind, id(t.quiet[1]))
                ok = settled.get(key)
                if ok is None:
                    ok = settled[key] = self._settled(kind, t.quiet[1])
                if ok:
                    jobs.append((due, seq, t))
            else:
                ok = False
            if not ok:
                limit = due
                break
        jobs = [j for j in jobs if j[0] < limit]
        live = [c for c in cycles.values() if c.held.deadline_ms < limit]
        if jobs or live:
            self._carry(jobs, live, limit)

    # -- is it settled? ---------------------------------------------------------------------------
    def _cycle(self, held: HeldPull, instances: dict) -> _Cycle | None:
        core = self.hub.core
        transport = self.hub.transport_of(held.channel)
        inst = instances.get(transport)
        if inst is None or transport.closed or held.channel.closed:
            return None
        req = held.context                  # the typed pull's HeldCall, or the PULL_MESSAGE command
        typed = req.__class__ is HeldCall
        if typed:
            group, broker_name = req.request.group, core.config.broker_name
            if transport._pending.get(req.opaque) is not req:
                return None
        else:
            ext = req.ext_fields or {}
            group, broker_name = ext.get("consumerGroup"), ext.get("bname")
            if req.opaque not in transport._pending:
                return None
        consumer = inst.consumers.get(group)
        if consumer is None or consumer.state is not ServiceState.RUNNING:
            return None
        pr = consumer.pull_requests.get(MessageQueue(held.topic, broker_name, held.queue_id))
        if pr is None or pr.opaque != req.opaque:
            return None
        pq = pr.pq
        if pq.dropped or consumer.process_queues.get(pr.mq) is not pq or pq.msg_count or pq.msg_tree:
            return None
        if consumer.orderly and not consumer.broadcasting and not pq.locked:
            return None
        sub = consumer.subscriptions.get(pr.mq.topic)
        offset = pr.next_offset
        if sub is None or held.offset != offset or not _not_found(core, held.request, held.channel, offset):
            return None
        mine = consumer.offset_store.table.get(pr.mq)
        if mine is None or mine < offset:     # the NO_NEW_MSG reply would move the offset
            return None
        if typed:
            again = sent = consumer.pull_request(pr, sub)
            rerun = without_commit(again)
            period_asked = req.suspend_ms
        else:
            header = consumer.pull_header(pr, sub)
            again = BrokerAPI.pull_command(header)
            sent = pull_request_of(again, allow_suspend=True)       # (as the 4.x front reads it)
            rerun = pull_request_of(again, allow_suspend=False)
            period_asked = int(header["suspendTimeoutMillis"])
        commit = sent.commit_offset
        if commit is not None and core.stored_offset(consumer.group, pr.mq.topic, pr.mq.queue_id) != commit:
            return None
        # (the pull held is the one sent again, most often: its answer was found above)
        if rerun != held.request and not _not_found(core, rerun, held.channel, offset):
            return None
        period = period_asked if core.config.long_polling_enable else core.config.short_polling_time_mills
        if period <= 0:
            return None
        return _Cycle(held, transport, pr, again, sent, period_asked, period)

    def _settled(self, kind: str, owner) -> bool:
        core = self.hub.core
        if kind == "offsets":
            return _offsets_settled(core, owner)
        if kind == "heartbeat":
            return _heartbeat_settled(core, owner)
        if kind == "routes":
            return _routes_settled(core, owner, self.routes)
        if kind == "rebalance":
            return _rebalance_settled(core, owner)
        if kind == "clean":
            return all(not pq.msg_tree for pq in owner.process_queues.values())
        if kind == "locks":
            cid = owner.instance.client_id
            return all(core.lock_holder(owner.group, (mq.topic, mq.broker_name, mq.queue_id)) == cid
                       for mq in owner.process_queues)
        return False

    # -- carrying forward -------------------------------------------------------------------------
    def _carry(self, jobs: list, cycles: list[_Cycle], limit: int) -> None:
        rt = self.hub.runtime
        order = []
        for due, seq, t in jobs:
            n = (limit - 1 - due) // t.interval + 1
            last = due + (n - 1) * t.interval
            self.carried += n
            order.append(((last, 0, -due, seq), t, last))
        for c in cycles:
            first = c.held.deadline_ms
            n = (limit - 1 - first) // c.period_ms + 1
            c.last_ms = first + (n - 1) * c.period_ms
            self.carried += n
            order.append(((c.last_ms, 1, -first, c.held.seq), c, c.last_ms))
        order.sort(key=lambda o: o[0])
        moved = {t for _, _, t in jobs}         # (a Timer hashes by identity, in C)
        # In place: a run call further up the stack (a listener advancing time) holds this list.
        rt._timers[:] = [e for e in rt._timers if e[2] not in moved]
        heapq.heapify(rt._timers)
        for _, item, last in order:
            if isinstance(item, Timer):
                item.due = last + item.interval
                rt.schedule(item)
                if item.quiet[0] == "locks":
                    _renew_locks(self.hub.core, item.quiet[1], last)
            else:
                self._resend(item)
        self.skips += 1

    def _resend(self, c: _Cycle) -> None:
        """The state the last expiry before the limit leaves: the pull sent again."""
        core = self.hub.core
        rt = self.hub.runtime
        held, transport, pr = c.held, c.transport, c.pull
        old = transport._pending.pop(held.context.opaque)
        if old.__class__ is HeldCall:
            old_timer, old.timer = old.timer, None      # (the timer holds the call: no cycle left)
            old_timer.cancel()
            timeout = old.timeout_ms
            call = HeldCall(next_typed_id(), old.callback, c.request, old.suspend_ms, timeout)
            call.timer = rt.schedule(Timer(c.last_ms + timeout, transport._typed_timed_out, (call,),
                                           quiet=old_timer.quiet))
            transport._pending[call.opaque] = call
            context = call
        else:
            callback, timer = old
            timer.cancel()
            _, code, timeout = timer.args
            context = c.request
            transport._pending[context.opaque] = (callback, rt.schedule(Timer(
                c.last_ms + int(timeout), transport._timed_out, (context.opaque, code, timeout), quiet=timer.quiet)))
        # the expiry carried and the pull sent again at L: held from L, as the front holds it
        core.withdraw_held_pull(held)
        if core.pull_or_hold(c.sent, held.channel, c.suspend_ms, context, now_ms=c.last_ms) is not None:
            raise RuntimeError("idle skipping sent a pull again that found something: its checks missed a change")
        pr.opaque = context.opaque
        pr.pq.last_pull_timestamp = c.last_ms


def _reply_id(timer: Timer) -> int:
    """The id of the request a reply timer waits for (a command's opaque, or a typed
    pull's HeldCall's)."""
    first = timer.args[0]
    return first.opaque if first.__class__ is HeldCall else first


def _not_found(core, request: PullRequest, channel, offset: int) -> bool:
    """Would the broker find nothing new for the pull ``request`` (its commit left out)
    at ``offset``?"""
    result = core.pull(request, channel)
    return result.outcome is PullOutcome.NO_NEW_MESSAGE and result.next_offset == offset


def _offsets_settled(core, inst) -> bool:
    """persistAll would send only offsets the broker already has (and forget none)."""
    for c in inst.consumers.values():
        store = c.offset_store
        if store is None:
            continue
        pqs = c.process_queues
        if isinstance(store, RemoteBrokerOffsetStore):
            for mq, off in store.table.items():
                if mq not in pqs or core.stored_offset(c.group, mq.topic, mq.queue_id) != off:
                    return False
        elif any(mq in store.table and store.persisted.get(mq) != store.table[mq] for mq in pqs):
            return False
    return True


def _heartbeat_settled(core, inst) -> bool:
    """The heartbeat would register exactly what the broker has registered."""
    return inst.closed or core.registered_as(registration_of(inst.heartbeat_data()), inst.transport.channel)


class _RouteReader:
    """``reader(core, topic)``: what GET_ROUTEINFO_BY_TOPIC would give the client now,
    parsed as it parses it (the reply's JSON made and read back). Parsed again only when
    the core's route changed: every skip asks for every topic, and the route is a frozen
    value, so an unchanged one gives the same parse."""

    def __init__(self) -> None:
        self._last: dict[str, tuple] = {}     # topic -> (the core's route, the client's parse of it)

    def __call__(self, core, topic: str) -> TopicRoute | None:
        route = core.name_route(topic)
        if route is None:
            return None
        last = self._last.get(topic)
        if last is not None and last[0] == route:
            return last[1]
        parsed = TopicRoute.from_json(topic, loads_fastjson(json.dumps(route_data(route)).encode()))
        self._last[topic] = (route, parsed)
        return parsed


def _routes_settled(core, inst, route_now: _RouteReader) -> bool:
    """The route poll would store the routes already cached."""
    topics = set(inst.routes)
    for c in inst.consumers.values():
        topics.update(c.subscriptions)
    return all(topic in inst.routes and inst.routes[topic] == route_now(core, topic) for topic in topics)


def _rebalance_settled(core, inst) -> bool:
    """Every consumer's rebalance would allocate the queues it already pulls."""
    for c in inst.consumers.values():
        if c.state is not ServiceState.RUNNING:
            continue
        pqs = c.process_queues
        if any(mq.topic not in c.subscriptions for mq in pqs):
            return False
        for topic in c.subscriptions:
            route = inst.routes.get(topic)
            if route is None or not route.subscribe_queues:
                # asked for again (when None) and warned about once: a no-op while it stays so
                if topic not in c.warned_no_route or (route is None and core.name_route(topic) is not None):
                    return False
                continue
            mq_all = sorted(route.subscribe_queues)
            if c.broadcasting:
                mine = mq_all
            else:
                ids = core.consumer_ids(c.group)
                if ids is None:
                    return False
                mine = allocate_averagely(inst.client_id, mq_all, sorted(ids))
            if set(mine) != {mq for mq in pqs if mq.topic == topic}:
                return False
    return True


def _renew_locks(core, consumer, at_ms: int) -> None:
    """What lock_all at ``at_ms`` leaves: every queue's lock renewed then."""
    mqs = list(consumer.process_queues)
    core.lock_queues(consumer.group, consumer.instance.client_id,
                     [(mq.topic, mq.broker_name, mq.queue_id) for mq in mqs], now_ms=at_ms)
    for mq in mqs:
        pq = consumer.process_queues[mq]
        pq.locked = True
        pq.last_lock_timestamp = at_ms
