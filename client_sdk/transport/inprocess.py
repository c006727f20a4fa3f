"""The in-process transport: a client in this process calls a ``BrokerCore`` directly.

Every request the SDK makes has a typed form (broker/operations.py) and goes to the
core's typed operations — sends, pulls (held ones answered by the core's PullReady with
the records themselves), send-backs, offsets, heartbeats, routes, locks — no
RemotingCommand built, no string header written or parsed (``BrokerAPI`` decides: it
asks ``transport.core()``). Fault rules keep them typed: the calls a rule can be about
ask the broker's door and translate its outcome (typed_faults.py), as the 4.x front
does for a command. What is left as commands: the admin requests, and every
request while an observer or an injected fault is attached (they see, or stop, each
one as a command) or when the hub crosses the real codec (``loopback``); those go to the
core's 4.x front, ``RemotingCommand`` objects as the network would carry them.

``InProcessBroker`` is the hub for one core: it hands out one ``InProcessTransport`` (one
broker ``Channel``, whose notifications it takes) per client, hands what the core
answers later (held pulls, NOTIFY_CONSUMER_IDS_CHANGED) to the right transport, and is
a time source of the runtime, so the loop ticks the core at ``core.next_deadline()``.
"""
from __future__ import annotations

import itertools
import threading
from typing import Callable

from rocketmq_emulator.broker.core import BrokerCore, Channel
from rocketmq_emulator.broker.fronts.remoting.front import RemotingFront
from rocketmq_emulator.broker.faults.door import Fault
from rocketmq_emulator.broker.faults.rules import Operation
from rocketmq_emulator.broker.fronts.remoting.protocol.fault_codes import DIALECT, refusal_code
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.broker.operations import OffsetCommit, Registration, SendBack, SendRequest
from rocketmq_emulator.broker.notifications import ConsumerIdsChanged, PullReady, TransactionCheck

from ..errors import MQBrokerError, RemotingConnectError, RemotingError, RemotingTimeoutError
from ..runtime import ClientRuntime, Timer
from .base import Connector, RequestHandler, ResponseCallback, Transport
from .held_calls import HeldCall, next_typed_id
from .idle_skip import IdleSkipper
from .typed_faults import HeldTypedPull, answer_now, late_result, without_commit

__all__ = ["InProcessBroker", "InProcessTransport"]


class InProcessBroker(Connector):
    """Connects clients to ``core`` and drives it from ``runtime`` (made on the core's
    clock when not given). ``observe(fn)`` sees every request: ``fn(transport, cmd)``.
    A client's request handler (``Transport.on_request``) gets the core's
    ConsumerIdsChanged as it is (a command only when the hub carries commands).

    On a virtual clock, ``skip_idle`` (default) lets ``advance`` carry settled periodic
    client work forward instead of running it request by request (``idle_skip``): same
    results, but an idle hour costs microseconds. Off while an observer or an injected
    fault is attached, and when two hubs share one runtime.

    Requests go to the core's typed operations (``typed_calls``), except while an
    observer or a fault is attached: those see every request as a command."""

    typed_calls = True
    lock = None             # set by share(): another thread calls the core too

    def __init__(self, core: BrokerCore, runtime: ClientRuntime | None = None, *,
                 skip_idle: bool = True) -> None:
        self.core = core
        self.front = RemotingFront(core, subscribe=False)
        self.runtime = runtime if runtime is not None else ClientRuntime(core.clock)
        if self.runtime.clock is not core.clock:
            raise ValueError("the runtime and the broker core must share one clock")
        self._transports: dict[Channel, InProcessTransport] = {}
        self._ports = itertools.count(50001)
        self._observers: list[Callable[[InProcessTransport, RemotingCommand], None]] = []
        self._faults: list[_Fault] = []
        # an observer or an injected transport fault is to see every command: kept as a
        # plain attribute, read on every typed call and every idle skip
        self.watched = False
        self._stop_notifications = core.subscribe(self._notified, (PullReady, ConsumerIdsChanged,
                                                                          TransactionCheck))
        # the runtime asks every loop turn: the core's own (cached) answer, no hop here
        self.next_deadline = core.next_deadline
        self.runtime.add_source(self)
        self.skipper: IdleSkipper | None = None
        if skip_idle and self.runtime.virtual:
            if self.runtime.idle_skipper is None:
                self.skipper = self.runtime.idle_skipper = IdleSkipper(self)
            else:   # another hub's skipper cannot vouch for this core's clients
                self.runtime.idle_skipper = _never_skip

    def share(self):
        """Let another thread call this core (a 5.x gRPC listener beside the test): from
        now on every call of this hub into the core holds the returned lock, which the
        other thread must hold around its own; no typed shortcut, no idle skipping (both
        reason about a core only this thread touches)."""
        if self.lock is None:
            self.lock = threading.RLock()
            self.typed_calls = False
            self.next_deadline = self._locked_next_deadline
            if self.runtime.idle_skipper is self.skipper and self.skipper is not None:
                self.runtime.idle_skipper = _never_skip
        return self.lock

    def connect(self) -> "InProcessTransport":
        channel = self.core.connect(f"{self.runtime.ip}:{next(self._ports)}", owner=self, dialect=DIALECT)
        transport = InProcessTransport(self, channel)
        self._transports[channel] = transport
        return transport

    def _rewatch(self) -> None:
        self.watched = bool(self._observers or self._faults)

    def transport_of(self, channel: Channel) -> "InProcessTransport | None":
        return self._transports.get(channel)

    def observe(self, fn: Callable[["InProcessTransport", RemotingCommand], None]) -> Callable[[], None]:
        self._observers.append(fn)
        self._rewatch()

        def stop() -> None:
            self._observers.remove(fn)
            self._rewatch()
        return stop

    def inject_fault(self, code: int, *, times: int | None = None,
                     error: Callable[[str], Exception] = RemotingTimeoutError) -> Callable[[], None]:
        """Make requests with ``code`` fail in the transport, as a lost connection or an
        RPC timeout would: the request never reaches the broker and the caller gets
        ``error(message)``. ``times`` limits how many requests fail (None: until the
        returned function is called). For failures the broker itself cannot produce."""
        fault = _Fault(int(code), times, error)
        self._faults.append(fault)
        self._rewatch()

        def remove() -> None:
            if fault in self._faults:
                self._faults.remove(fault)
                self._rewatch()
        return remove

    def _check_fault(self, cmd: RemotingCommand) -> None:
        for fault in self._faults:
            if fault.code == cmd.code:
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                        self._rewatch()
                raise fault.error(f"injected fault: request code {cmd.code} failed in transit")

    # -- the one door into the core for commands ------------------------------------
    def handle(self, transport: "InProcessTransport", cmd: RemotingCommand) -> RemotingCommand | None:
        if self._faults:
            self._check_fault(cmd)
        if self._observers:
            for fn in self._observers:
                fn(transport, cmd)
        if self.lock is not None:
            with self.lock:
                reply = self.front.handle(cmd, transport.channel)
                self.route_outgoing()
            return reply
        reply = self.front.handle(cmd, transport.channel)
        self.route_outgoing()
        return reply

    def _notified(self, n) -> None:
        """A held pull answered, a group's consumer ids changed, or a transaction's
        check-back, for a connection of this hub: to its transport at once (a typed pull's
        answer as it is, a command's as the 4.x reply; a check-back as its command)."""
        t = self._transports.get(n.channel)
        if t is None:
            return
        if n.__class__ is PullReady:
            if n.context.__class__ is HeldCall:
                t._answered(n.context, n.result)
                return
        elif n.__class__ is ConsumerIdsChanged and self.typed_calls and t._handler is not None:   # as it is
            self.runtime.call_soon(t._handler, n)
            return
        command = self.front.answer_for(n)
        if command is not None:
            self.deliver(t, command)

    def route_outgoing(self) -> None:
        """What the 4.x front sent clients unasked (RESET_CONSUMER_CLIENT_OFFSET)."""
        if self.front.outgoing:
            for channel, cmd in self.front.take_outgoing():
                t = self._transports.get(channel)
                if t is not None:
                    self.deliver(t, cmd)

    def deliver(self, transport: "InProcessTransport", cmd: RemotingCommand) -> None:
        """Hand a command the core sent later (a held pull's reply, a notification) to the
        client's transport (the loopback transport encodes it first)."""
        transport._deliver(cmd)

    def forget(self, transport: "InProcessTransport") -> None:
        self._transports.pop(transport.channel, None)
        self.core.disconnect(transport.channel)
        self.route_outgoing()

    # -- TimeSource --------------------------------------------------------------------
    def _locked_next_deadline(self) -> int | None:
        with self.lock:
            return self.core.next_deadline()

    def tick(self) -> None:
        if self.lock is not None:
            with self.lock:
                self.core.tick()
                self.route_outgoing()
            return
        self.core.tick()
        if self.front.outgoing:
            self.route_outgoing()

    def close(self) -> None:
        for t in list(self._transports.values()):
            t.close()
        self._stop_notifications()
        self.runtime.remove_source(self)
        if self.skipper is not None and self.runtime.idle_skipper is self.skipper:
            self.runtime.idle_skipper = None


def _never_skip(limit_ms: int) -> None:
    return None


class _Fault:
    __slots__ = ("code", "times", "error")

    def __init__(self, code: int, times: int | None, error) -> None:
        self.code = code
        self.times = times
        self.error = error


class InProcessTransport(Transport):
    """One client connection to an in-process core (a broker ``Channel``)."""

    def __init__(self, hub: InProcessBroker, channel: Channel) -> None:
        self.hub = hub
        self.channel = channel
        self.runtime = hub.runtime
        # opaque -> (callback, timer) of a command, or the HeldCall of a typed pull
        self._pending: dict[int, tuple[ResponseCallback, object] | HeldCall] = {}
        self._handler: RequestHandler | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def local_address(self) -> str:
        return self.channel.remote

    def core(self):
        """The core, for a typed call, unless an observer or an injected fault is to see
        (or stop) every command, this hub carries commands through the codec, or the
        broker is stopped (its front answers every request with that). Fault rules are
        no reason to leave it: the typed calls below ask the broker's door."""
        hub = self.hub
        if self._closed or hub.watched or not hub.typed_calls:
            return None
        core = hub.core
        return None if core.stopped else core

    def core_done(self) -> None:
        hub = self.hub
        if hub.front.outgoing:          # (what route_outgoing looks at first: a call fewer per typed call)
            hub.route_outgoing()

    # -- typed calls (after ``core()``): each asks the door while rules are installed ---------
    def _fault(self, operation, topic: str | None, group: str | None):
        """The fault outcome of this call (None: no rule fires; asked only while the
        broker has rules)."""
        return self.hub.core.fault_outcome(operation, topic, group, self.channel.client_id, DIALECT)

    def send(self, request: SendRequest):
        """The core's send of ``request``: its SendResult (a fault rule's refusal or lost
        answer raised, typed_faults.py)."""
        core = self.hub.core
        if core.faults_active:
            outcome = self._fault(Operation.SEND, request.topic, request.producer_group)
            if outcome is not None:
                answer_now(outcome, lambda: self._done(core.send(request, self.channel)),
                           RequestCode.SEND_MESSAGE_V2, f"SEND_MESSAGE_V2 {request.topic}")
        result = core.send(request, self.channel)
        if self.hub.front.outgoing:
            self.hub.route_outgoing()
        return result

    def send_back(self, request: SendBack):
        core = self.hub.core
        if core.faults_active:
            outcome = self._fault(Operation.SEND_BACK, request.origin_topic, request.group)
            if outcome is not None:
                answer_now(outcome, lambda: self._done(core.send_back(request)),
                           RequestCode.CONSUMER_SEND_MSG_BACK, "CONSUMER_SEND_MSG_BACK")
        result = core.send_back(request)
        if self.hub.front.outgoing:
            self.hub.route_outgoing()
        return result

    def commit_offset(self, commit: OffsetCommit) -> None:
        """A oneway offset commit (refused or dropped: not made; delayed: made, its
        answer, which no one reads, late)."""
        core = self.hub.core
        if core.faults_active:
            outcome = self._fault(Operation.ACK, commit.topic, commit.group)
            if outcome is not None and outcome.kind is not Fault.DELAYED:
                return
        core.commit_offset(commit)
        if self.hub.front.outgoing:
            self.hub.route_outgoing()

    def register(self, registration: Registration) -> None:
        core = self.hub.core
        if core.faults_active:
            outcome = self._fault(Operation.HEARTBEAT, None, None)
            if outcome is not None:
                answer_now(outcome, lambda: self._done(core.register(registration, self.channel)),
                           RequestCode.HEART_BEAT, "HEART_BEAT")
        self._done(core.register(registration, self.channel))

    def route(self, topic: str):
        """The topic's route from the core's name server (None: unknown, or a refusal
        with TOPIC_NOT_EXIST, the route's default, as the command path reads it)."""
        core = self.hub.core
        if core.faults_active:
            outcome = self._fault(Operation.ROUTE, topic, None)
            if outcome is not None:
                try:
                    answer_now(outcome, lambda: None, RequestCode.GET_ROUTEINFO_BY_TOPIC,
                               f"GET_ROUTEINFO_BY_TOPIC {topic}")
                except MQBrokerError as exc:
                    if exc.code == ResponseCode.TOPIC_NOT_EXIST:
                        return None
                    raise
        return core.name_route(topic)

    def _done(self, result):
        hub = self.hub
        if hub.front.outgoing:
            hub.route_outgoing()
        return result

    # -- typed pulls -----------------------------------------------------------------------
    def pull(self, request, suspend_ms: int, callback: ResponseCallback, timeout_ms: int) -> int:
        """The core's pull of ``request``, long-polling for ``suspend_ms``: later, on the
        loop, ``callback(PullResult, None)`` — at once when it found something or was
        refused, else when the core answers the held pull — or ``callback(None, error)``
        after ``timeout_ms`` without an answer. Returns the call's id. (Callers ask
        ``core()`` first.)"""
        opaque = next_typed_id()
        call = HeldCall(opaque, callback, request, suspend_ms, timeout_ms)
        core = self.hub.core
        if core.faults_active:
            self._pull_under_faults(core, call)
            return opaque
        result = core.pull_or_hold(request, self.channel, suspend_ms, call)
        if result is not None:
            self.runtime.call_soon(callback, result, None)
        else:
            self._wait(call)
        return opaque

    def _wait(self, call: HeldCall) -> None:
        """``call`` is answered later: its reply timer set (once)."""
        if call.timer is not None:
            return
        rt = self.runtime
        call.timer = rt.schedule(Timer(rt.clock.now_ms() + call.timeout_ms, self._typed_timed_out, (call,), None,
                                       ("reply", self)))
        self._pending[call.opaque] = call

    def _pull_call(self, call: HeldCall) -> None:
        """Run ``call``'s pull again (a hold released it; its reply timer runs on)."""
        if self._pending.get(call.opaque) is call:
            self._pull_under_faults(self.hub.core, call)

    def _pull_under_faults(self, core, call: HeldCall) -> None:
        """A pull while the broker has fault rules: an ack rule asked for the commit it
        carries, then the pull rules (typed_faults.py says what each outcome does)."""
        request = call.request
        if request.commit_offset is not None:
            ack = self._fault(Operation.ACK, request.topic, request.group)
            if ack is not None:
                if ack.kind is Fault.DELAYED:
                    commit = (request.group, request.topic, request.queue_id, request.commit_offset)
                    core.call_later(ack.delay_ms, lambda: core.record_offset_commit(*commit))
                request = call.request = without_commit(request)
        outcome = self._fault(Operation.PULL, request.topic, request.group)
        kind = None if outcome is None else outcome.kind
        if kind is Fault.REFUSED:
            self.runtime.call_soon(call.callback, None, MQBrokerError(refusal_code(outcome), outcome.reason, None,
                                                                      "PULL_MESSAGE"))
            return
        if kind is Fault.DROPPED:
            self._wait(call)
            return
        if kind is Fault.HELD:
            if request.commit_offset is not None:     # a hold keeps deliveries back, not the consumer's progress
                core.record_offset_commit(request.group, request.topic, request.queue_id, request.commit_offset)
                call.request = without_commit(request)
            self._wait(call)
            self.hub.front.held_pulls.hold(HeldTypedPull(self, call), call.suspend_ms)
            return
        call.fault = outcome                    # a delay or a duplicate acts on the answer, held or not
        result = core.pull_or_hold(request, self.channel, call.suspend_ms, call)
        if result is None:
            self._wait(call)
        elif kind is Fault.DELAYED:
            self._wait(call)
            self._answered(call, result)        # (later: the delay's)
        elif self._pending.get(call.opaque) is call:
            self._answered(call, result)        # a pull a hold released: waiting
        else:
            call.fault = None
            self.runtime.call_soon(call.callback, result if outcome is None else late_result(outcome, result), None)

    def _answered(self, call: HeldCall, result) -> None:
        if call.fault is not None:
            outcome, call.fault = call.fault, None
            if outcome.kind is Fault.DELAYED:
                self.hub.core.call_later(outcome.delay_ms, lambda: self._answered(call, result))
                return
            result = late_result(outcome, result)
        if self._pending.pop(call.opaque, None) is not None:
            call.timer.cancel()
            call.timer = None           # (the timer holds the call: no cycle left for the collector)
            self.runtime.call_soon(call.callback, result, None)

    def _typed_timed_out(self, call: HeldCall) -> None:
        if self._pending.pop(call.opaque, None) is not None:
            call.timer = None
            call.callback(None, RemotingTimeoutError(f"wait response on a pull of {call.request.topic}/"
                                                     f"{call.request.queue_id} timed out"))

    # -- commands --------------------------------------------------------------------------
    def request(self, cmd: RemotingCommand, timeout_ms: int = 3000) -> RemotingCommand:
        if self._closed:
            raise RemotingConnectError(f"connection {self.channel.remote} is closed")
        reply = self.hub.handle(self, cmd)
        if reply is None:
            # Only a long-polling pull is answered later; a synchronous caller in this
            # process cannot wait for it without the loop.
            raise RemotingTimeoutError(f"request code {cmd.code} got no immediate response in-process "
                                       f"(use request_async for suspended pulls)")
        return reply

    def request_async(self, cmd: RemotingCommand, callback: ResponseCallback, timeout_ms: int = 30000) -> None:
        rt = self.runtime
        if self._closed:
            rt.call_soon(callback, None, RemotingConnectError(f"connection {self.channel.remote} is closed"))
            return
        try:
            reply = self.hub.handle(self, cmd)
        except RemotingError as exc:   # an injected fault
            rt.call_soon(callback, None, exc)
            return
        if reply is not None:
            rt.call_soon(callback, reply, None)
        else:
            timer = rt.schedule(Timer(rt.clock.now_ms() + int(timeout_ms), self._timed_out,
                                      (cmd.opaque, cmd.code, timeout_ms), quiet=("reply", self)))
            self._pending[cmd.opaque] = (callback, timer)

    def oneway(self, cmd: RemotingCommand) -> None:
        if self._closed:
            raise RemotingConnectError(f"connection {self.channel.remote} is closed")
        self.hub.handle(self, cmd)

    def on_request(self, handler: RequestHandler) -> None:
        self._handler = handler

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.hub.forget(self)
        pending, self._pending = self._pending, {}
        for entry in pending.values():
            if entry.__class__ is HeldCall:
                callback, timer = entry.callback, entry.timer
                entry.timer = None
            else:
                callback, timer = entry
            timer.cancel()
            self.runtime.call_soon(callback, None, RemotingConnectError("connection closed"))

    # -- from the hub ------------------------------------------------------------------------
    def _deliver(self, cmd: RemotingCommand) -> None:
        if cmd.is_response:
            entry = self._pending.pop(cmd.opaque, None)
            if entry is not None:
                entry[1].cancel()
                self.runtime.call_soon(entry[0], cmd, None)
        elif self._handler is not None:
            self.runtime.call_soon(self._handler, cmd)

    def _timed_out(self, opaque: int, code: int, timeout_ms: int) -> None:
        entry = self._pending.pop(opaque, None)
        if entry is not None:
            entry[0](None, RemotingTimeoutError(f"wait response on request code {code} timed out "
                                                f"after {timeout_ms} ms"))

    def __repr__(self) -> str:
        return f"InProcessTransport({self.channel.remote}{', closed' if self._closed else ''})"
