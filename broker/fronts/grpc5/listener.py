"""The 5.x gRPC listener: apache.rocketmq.v2.MessagingService on grpc.aio, in the serve
loop, in front of broker/fronts/grpc5/front.py (reference rocketmq-5x-grpc.md §1, §8).

The servicer runs on the same asyncio loop as the remoting server, so core calls never
race. After each call that may have changed the core, ``after_activity`` (the remoting
server's) writes what the core emitted and re-arms the tick timer. A ReceiveMessage that
finds nothing waits — in real time, as the client's deadline runs in real time — until a
message is stored or re-stored (a core event: a send, a delay ending, an invisible time
ending, which the core's tick revives), a FIFO or lite delivery is visible again in place
(the core's VisibleAgain notification), or its long-poll time is up, then answers
MESSAGE_NOT_FOUND. Plaintext only.

Fault rules (issue 38; fault_answers.py says how each looks to a client): a unary call,
a ReceiveMessage and each Settings on a Telemetry stream ask the core's door
(``core.fault_outcome``) once, when a rule is installed — with none, the cost is one
attribute test per call (per look of a long poll, for a receive). A hold rule is a state the receive asks on each look.

A Telemetry stream carries the server's commands too: the front's transaction
check-backs (RecoverOrphanedTransactionCommand) are queued for the client's stream
(``GrpcServer.push``, from whichever thread ticked the core) and written in order with
the answers to its Settings.

Limits (connection_guard.py's): the door (door.py) accepts the connections and relays
them to gRPC's own server, so at ``max_connections`` the oldest connection that never
made a call is closed to admit a new one, as on the other fronts, and one must send the
HTTP/2 preface within ``handshake_timeout_s``; gRPC's core closes a connection with no
call for ``idle_timeout_s`` (a 5.x client keeps its Telemetry stream open, so it is
never idle); HTTP/2 flow control bounds what a client leaves unread. Without a
connection limit (0) there is no door: gRPC listens on the port itself, and its own
handshake timeout applies. A request that is not the protobuf its method takes is answered
INTERNAL "Invalid protobuf byte sequence", as grpc-java's marshaller answers, with one
WARNING line and no traceback.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from typing import Callable

import grpc

from ...events import EventKind
from ...notifications import VisibleAgain
from ...faults.door import Fault
from ...faults.rules import Operation
from ...log_text import printable
from .convert import pb, status
from .fault_answers import (DIALECT, HOLD_RECHECK_S, clock_timer, operation_of, refusal, settings_about, wait_for_timer,
                            wait_out_deadline)
from .front import DEFAULT_LONG_POLL_MS, MAX_LONG_POLL_MS, Rocketmq5Front
from .stubs import service_grpc as service_pb2_grpc
from .stubs import spb
from .door import GrpcDoor
from ...adapters.connection_guard import ConnectionLimits
from ...adapters.listener_thread import ListenerThread

__all__ = ["GrpcServer", "GrpcListenerThread"]

log = logging.getLogger("broker.grpc")

_WAKE_KINDS = (EventKind.STORED, EventKind.REDELIVERED)
_DEADLINE_MARGIN_S = 0.3        # answer this long before the client's deadline


def _client_id(context) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == "x-mq-client-id":
            return value
    return ""


class _Malformed:
    """What a request that does not parse as its method's protobuf becomes (the handler
    answers it; gRPC would otherwise log a traceback per such call)."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


def _tolerant(parse):
    def deserialize(data: bytes):
        try:
            return parse(data)
        except Exception as exc:        # (protobuf's DecodeError, and anything a hostile payload raises)
            return _Malformed(exc)
    return deserialize


async def _refuse_malformed(method: str, request: _Malformed, context) -> None:
    log.warning("5.x %s from client %s: a malformed request (%s); answered INTERNAL", method,
                printable(_client_id(context) or "?", 100), printable(request.error, 200))
    await context.abort(grpc.StatusCode.INTERNAL, "Invalid protobuf byte sequence")


def _guarded(method):
    """A unary call whose handling fails unexpectedly answers INTERNAL_SERVER_ERROR (one
    log line with the traceback: it is this broker's bug, not the client's), so one
    client's request never takes the listener down or leaves the client guessing."""
    reply_type = _REPLY[method.__name__]

    async def call(self, request, context):
        if request.__class__ is _Malformed:
            await _refuse_malformed(method.__name__, request, context)
        core = self.s.core
        if core.faults_active:
            answered = await _with_fault(self, method, request, context)
            if answered is not None:
                return answered
        try:
            return await method(self, request, context)
        except Exception as exc:
            log.exception("5.x %s failed", method.__name__)
            return reply_type(status=status(pb.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}"))

    call.__name__ = method.__name__
    return call


async def _with_fault(servicer, method, request, context):
    """The reply under the fault rule this call matches (None: no rule fired, run it)."""
    about = operation_of(method.__name__, request)
    if about is None:
        return None
    outcome, due = _match(servicer.s, about, _client_id(context))
    answer = None if outcome is None else _UNARY_ANSWERS.get(outcome.kind)
    return None if answer is None else await answer(servicer, method, request, context, outcome, due)


async def _refused(servicer, method, request, context, outcome, due):
    return _REPLY[method.__name__](status=refusal(outcome))


async def _dropped(servicer, method, request, context, outcome, due):
    if outcome.stored:
        await method(servicer, request, context)
    await wait_out_deadline(context)


async def _delayed(servicer, method, request, context, outcome, due):
    reply = await method(servicer, request, context)    # done now, told late
    if not await wait_for_timer(due, context):
        await wait_out_deadline(context)                # not due before the deadline: lost
    return reply


# each outcome of a unary call on the 5.x wire (a receive's: ReceiveMessage below)
_UNARY_ANSWERS = {Fault.REFUSED: _refused, Fault.DROPPED: _dropped, Fault.DELAYED: _delayed}


def _match(server, about, client_id: str):
    """(the fault outcome of this call or None, the due-time event of a delay): the
    timer is set with the hit, under the core's lock, so a clock moved by anyone who
    saw the hit passes it."""
    due = None
    with server.lock or contextlib.nullcontext():
        outcome = server.core.fault_outcome(about[0], about[1], about[2], client_id, DIALECT)
        if outcome is not None and outcome.kind is Fault.DELAYED:
            due = clock_timer(server.core, outcome.delay_ms)
    if due is not None:
        server.after_activity()                             # (a real-clock server's tick timer)
    return outcome, due


def _held(server, request, first_look: bool) -> bool:
    """Whether a hold rule stops deliveries to this receive's group now; the first look
    of a call that is held counts on the rule (a receive held, as a 4.x pull is)."""
    with server.lock or contextlib.nullcontext():
        return server.core.fault_held(request.group.name or None, request.message_queue.topic.name or None, DIALECT,
                                      count=first_look)


_REPLY = {"EndTransaction": spb.EndTransactionResponse,
          "QueryRoute": spb.QueryRouteResponse, "Heartbeat": spb.HeartbeatResponse,
          "QueryAssignment": spb.QueryAssignmentResponse, "SendMessage": spb.SendMessageResponse,
          "AckMessage": spb.AckMessageResponse, "ChangeInvisibleDuration": spb.ChangeInvisibleDurationResponse,
          "ForwardMessageToDeadLetterQueue": spb.ForwardMessageToDeadLetterQueueResponse,
          "NotifyClientTermination": spb.NotifyClientTerminationResponse,
          "SyncLiteSubscription": spb.SyncLiteSubscriptionResponse}


class _Servicer(service_pb2_grpc.MessagingServiceServicer):
    def __init__(self, server: "GrpcServer") -> None:
        self.s = server
        self.front = server.front

    def _done(self):
        self.s.after_activity()

    @_guarded
    async def QueryRoute(self, request, context):
        st, queues = self.front.query_route(request.topic.name, request.endpoints)
        self._done()
        return spb.QueryRouteResponse(status=st, message_queues=queues)

    @_guarded
    async def Heartbeat(self, request, context):
        return spb.HeartbeatResponse(status=self.front.heartbeat(_client_id(context)))

    @_guarded
    async def QueryAssignment(self, request, context):
        st, assignments = self.front.query_assignment(request.topic.name, request.group.name, request.endpoints)
        self._done()
        return spb.QueryAssignmentResponse(status=st, assignments=assignments)

    @_guarded
    async def SendMessage(self, request, context):
        st, entries = self.front.send(request.messages)
        self._done()
        return spb.SendMessageResponse(status=st, entries=entries)

    async def ReceiveMessage(self, request, context):
        if request.__class__ is _Malformed:
            await _refuse_malformed("ReceiveMessage", request, context)
        poll_ms = (request.long_polling_timeout.seconds * 1000 + request.long_polling_timeout.nanos // 1_000_000
                   if request.HasField("long_polling_timeout") else DEFAULT_LONG_POLL_MS)
        until = time.monotonic() + min(poll_ms, MAX_LONG_POLL_MS) / 1000
        client_id = _client_id(context)
        remaining = context.time_remaining()
        if remaining is not None:
            until = min(until, time.monotonic() + remaining - _DEADLINE_MARGIN_S)
        core = self.s.core
        outcome = due = None
        asked = counted = False
        while True:
            wake = self.s.arrival
            held = False
            if core.faults_active:
                held = _held(self.s, request, first_look=not counted)
                counted = counted or held
                # The other rules are asked once per call, when one is first there and no
                # hold is (a hold counts once per call it holds): a poll waiting since before
                # a rule was added meets it when it wakes.
                if not held and not asked:
                    asked = True
                    outcome, due = _match(self.s, operation_of("ReceiveMessage", request), client_id)
                    if outcome is not None and (outcome.kind is Fault.REFUSED or outcome.kind is Fault.DROPPED):
                        break
            if held:
                st, messages = None, []         # as if nothing were there; the messages stay stored
            else:
                try:
                    st, messages = self.front.receive(request, client_id)
                except Exception as exc:
                    log.exception("5.x ReceiveMessage failed")
                    st, messages = status(pb.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}"), []
                self._done()
                if st is not None:
                    break
            left = until - time.monotonic()
            if left <= 0:
                st = status(pb.MESSAGE_NOT_FOUND, "no new message")
                break
            try:
                await asyncio.wait_for(wake.wait(), min(left, HOLD_RECHECK_S) if held else left)
            except asyncio.TimeoutError:
                pass
        copies = 1
        if outcome is not None:
            kind = outcome.kind
            if kind is Fault.REFUSED:
                yield spb.ReceiveMessageResponse(status=refusal(outcome))
                return
            if kind is Fault.DROPPED:
                await wait_out_deadline(context)
                return
            if kind is Fault.DELAYED and not await wait_for_timer(due, context):
                await wait_out_deadline(context)    # not due before the deadline: lost (the pop stands)
                return
            if kind is Fault.DUPLICATED:
                copies = 2
        yield spb.ReceiveMessageResponse(status=st)
        for m in messages:
            reply = spb.ReceiveMessageResponse(message=m)
            for _ in range(copies):
                yield reply
        now = self.s.core.clock.now_ms()
        ts = spb.ReceiveMessageResponse()
        ts.delivery_timestamp.seconds, ts.delivery_timestamp.nanos = now // 1000, (now % 1000) * 1_000_000
        yield ts

    @_guarded
    async def AckMessage(self, request, context):
        st, entries = self.front.ack(request.group.name, request.topic.name, request.entries)
        self._done()
        return spb.AckMessageResponse(status=st, entries=entries)

    @_guarded
    async def ChangeInvisibleDuration(self, request, context):
        st, handle = self.front.change_invisible(request.group.name, request.topic.name, request.receipt_handle,
                                                 request.invisible_duration, request.lite_topic)
        self._done()
        return spb.ChangeInvisibleDurationResponse(status=st, receipt_handle=handle)

    @_guarded
    async def ForwardMessageToDeadLetterQueue(self, request, context):
        st = self.front.forward_to_dlq(request.group.name, request.topic.name, request.receipt_handle,
                                       request.lite_topic)
        self._done()
        return spb.ForwardMessageToDeadLetterQueueResponse(status=st)

    @_guarded
    async def SyncLiteSubscription(self, request, context):
        st = self.front.sync_lite_subscription(_client_id(context), request)
        self._done()
        return spb.SyncLiteSubscriptionResponse(status=st)

    @_guarded
    async def NotifyClientTermination(self, request, context):
        return spb.NotifyClientTerminationResponse(status=self.front.notify_termination(_client_id(context)))

    @_guarded
    async def EndTransaction(self, request, context):
        st = self.front.end_transaction(request.topic.name, request.transaction_id, request.resolution,
                                        request.source)
        self._done()
        return spb.EndTransactionResponse(status=st)

    async def Telemetry(self, request_iterator, context):
        """Answers each Settings on the stream, and writes the server's own commands
        (``GrpcServer.push``) between them, in the order they come."""
        client_id = _client_id(context)
        outbox = self.s.open_stream(client_id)
        reader = asyncio.create_task(self._read_telemetry(client_id, request_iterator, outbox))
        try:
            while True:
                item = await outbox.get()
                if item is None:
                    break
                if item.__class__ is _Abort:
                    if item.malformed is not None:
                        await _refuse_malformed("Telemetry", item.malformed, context)
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                        "Settings must carry publishing or subscription")
                yield item
        finally:
            reader.cancel()
            self.s.close_stream(client_id, outbox)
            self.front.notify_termination(client_id)
            self._done()

    async def _read_telemetry(self, client_id: str, request_iterator, outbox: asyncio.Queue) -> None:
        late: set[asyncio.Task] = set()         # Settings answers a delay rule holds back
        try:
            async for command in request_iterator:
                if command.__class__ is _Malformed:
                    outbox.put_nowait(_Abort(command))
                    return
                if not command.HasField("settings"):
                    continue            # thread stack traces, verify results: nothing to do
                due = None
                if self.s.core.faults_active:
                    outcome, due = _match(self.s, (Operation.HEARTBEAT, *settings_about(command.settings)),
                                          client_id)
                    if outcome is not None and outcome.kind is Fault.REFUSED:
                        outbox.put_nowait(spb.TelemetryCommand(status=refusal(outcome)))
                        continue        # not taken: the client is told so, and may send them again
                    if outcome is not None and outcome.kind is Fault.DROPPED:
                        continue        # neither taken nor answered
                settings = self.front.telemetry_settings(client_id, command.settings)
                self._done()
                if settings is None:
                    outbox.put_nowait(_Abort(None))
                    return
                reply = spb.TelemetryCommand(status=status(pb.OK, "OK"), settings=settings)
                if due is None:
                    outbox.put_nowait(reply)
                else:                   # taken now, answered when the broker's clock is there
                    task = asyncio.create_task(_put_when(due, outbox, reply))
                    late.add(task)
                    task.add_done_callback(late.discard)
        except asyncio.CancelledError:
            raise
        except Exception as exc:        # the client went away mid-read (or the stream broke): the stream ends
            log.info("5.x Telemetry stream of %s ended: %s", printable(client_id, 100), printable(exc, 200))
        finally:
            for task in late:
                task.cancel()
            outbox.put_nowait(None)


async def _put_when(due: asyncio.Event, outbox: asyncio.Queue, reply) -> None:
    await due.wait()
    outbox.put_nowait(reply)


class _Abort:
    """What the Telemetry reader hands the writer to end the stream with an error."""

    __slots__ = ("malformed",)

    def __init__(self, malformed: "_Malformed | None") -> None:
        self.malformed = malformed


async def _unsupported(self, request, context):
    if request.__class__ is _Malformed:
        await _refuse_malformed("a call", request, context)
    return _UNSUPPORTED_REPLY[type(request).__name__](status=status(pb.UNSUPPORTED, "not supported"))


def _unimplemented(name: str):
    """A method this broker does not serve: UNIMPLEMENTED, without the traceback the
    generated base class's NotImplementedError would log per call."""
    async def call(request, context):
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{name} is not supported by this broker")
    return call


def _handlers(servicer) -> grpc.GenericRpcHandler:
    """MessagingService's methods as the generated stubs register them, but each request
    parsed by ``_tolerant``: a malformed one reaches the servicer as ``_Malformed``."""
    service = spb.DESCRIPTOR.services_by_name["MessagingService"]
    kinds = {(False, False): grpc.unary_unary_rpc_method_handler, (False, True): grpc.unary_stream_rpc_method_handler,
             (True, False): grpc.stream_unary_rpc_method_handler, (True, True): grpc.stream_stream_rpc_method_handler}
    handlers = {}
    for m in service.methods:
        make = kinds[(m.client_streaming, m.server_streaming)]
        own = getattr(type(servicer), m.name) is not getattr(service_pb2_grpc.MessagingServiceServicer, m.name)
        handlers[m.name] = make(getattr(servicer, m.name) if own else _unimplemented(m.name),
                                request_deserializer=_tolerant(getattr(spb, m.input_type.name).FromString),
                                response_serializer=getattr(spb, m.output_type.name).SerializeToString)
    return grpc.method_handlers_generic_handler(service.full_name, handlers)


_UNSUPPORTED_REPLY = {"QueryOffsetRequest": spb.QueryOffsetResponse, "GetOffsetRequest": spb.GetOffsetResponse,
                      "UpdateOffsetRequest": spb.UpdateOffsetResponse, "RecallMessageRequest": spb.RecallMessageResponse}
for _name in ("QueryOffset", "GetOffset", "UpdateOffset", "RecallMessage"):
    setattr(_Servicer, _name, _unsupported)


def _limit_options(limits: ConnectionLimits) -> list[tuple[str, int]]:
    """gRPC's own share of the limits (the door keeps the count of connections)."""
    options = []
    if limits.handshake_timeout_s:
        options.append(("grpc.server_handshake_timeout_ms", int(limits.handshake_timeout_s * 1000)))
    if limits.idle_timeout_s:
        options.append(("grpc.max_connection_idle_ms", int(limits.idle_timeout_s * 1000)))
    return options


def _check_free(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)    # as a listener would: TIME_WAIT is fine
        probe.bind((host, port))


class _Locked:
    """The front with every call made under ``lock``: for a core that another thread
    drives too (an in-process test broker beside this listener's thread)."""

    def __init__(self, front: Rocketmq5Front, lock) -> None:
        self._front = front
        self._lock = lock

    def __getattr__(self, name):
        fn = getattr(self._front, name)
        lock = self._lock

        def locked(*args, **kwargs):
            with lock:
                return fn(*args, **kwargs)

        return locked


class GrpcServer:
    """``start()`` binds host:port (0: a free one, in ``port`` after); ``stop()``.
    ``lock``: a lock held around every core call, when another thread shares the core."""

    def __init__(self, core, host: str, port: int, after_activity: Callable[[], None], lock=None,
                 limits: ConnectionLimits | None = None) -> None:
        self.core = core
        self.host = host
        self.port = port
        self.limits = limits if limits is not None else ConnectionLimits()
        self.after_activity = after_activity
        front = Rocketmq5Front(core)
        front.outgoing = self.push
        self.front = front if lock is None else _Locked(front, lock)
        self.lock = lock
        self._streams: dict[str, asyncio.Queue] = {}     # client id -> its Telemetry stream's outbox
        self.arrival = asyncio.Event()
        self._server = None
        self.door: GrpcDoor | None = None
        self._unsubscribe = None
        self._loop = None

    def _on_arrival(self, event) -> None:
        # (the core may store from another thread: wake on this listener's loop)
        self._on_loop(self._wake)

    def _on_loop(self, fn, *args) -> None:
        """Run ``fn(*args)`` on this listener's loop: at once when called on it, else
        soon, from whichever thread ticked the core (nothing when it is not running)."""
        loop = self._loop
        if loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    # -- Telemetry streams ------------------------------------------------------------------
    def open_stream(self, client_id: str) -> asyncio.Queue:
        outbox: asyncio.Queue = asyncio.Queue()
        self._streams[client_id] = outbox            # (a client's newer stream replaces its older one)
        return outbox

    def close_stream(self, client_id: str, outbox: asyncio.Queue) -> None:
        if self._streams.get(client_id) is outbox:
            del self._streams[client_id]

    def push(self, client_id: str, command) -> None:
        """Write ``command`` on ``client_id``'s Telemetry stream (from any thread); a client
        without one is gone, and the command with it (as a proxy's inactive channel)."""
        self._on_loop(self._deliver, client_id, command)

    def _deliver(self, client_id: str, command) -> None:
        outbox = self._streams.get(client_id)
        if outbox is None:
            log.info("5.x client %s has no Telemetry stream: its transaction check-back is dropped",
                     printable(client_id, 100))
            return
        outbox.put_nowait(command)

    def _wake(self) -> None:
        # wake every waiting poll; later ones wait on a fresh event
        self.arrival.set()
        self.arrival = asyncio.Event()

    async def start(self) -> None:
        """Raises OSError (errno and strerror set) when the port cannot be had."""
        _check_free(self.host, self.port)           # a clear error, before gRPC logs its own
        # The door costs a relay of every byte through this loop: it is there for the
        # connection limit, so without one (--max-connections 0) gRPC takes the port itself.
        door = GrpcDoor(self.host, self.port, self.limits, log) if self.limits.max_connections else None
        # no SO_REUSEPORT: a second server on the same port must fail, not share it
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0), *_limit_options(self.limits)])
        server.add_generic_rpc_handlers((_handlers(_Servicer(self)),))
        public = f"{self.host}:{self.port}" if ":" not in self.host else f"[{self.host}]:{self.port}"
        try:
            bound = server.add_insecure_port(door.inner_address if door is not None else public)
        except RuntimeError:            # newer grpcio raises where older returned 0
            bound = 0
        if bound == 0:
            if door is None:
                raise OSError(98, "address already in use or not available")
            await door.stop()
            raise OSError(98, f"gRPC cannot listen behind its door on {door.inner_address}")
        await server.start()
        if door is not None:
            try:
                await door.start()
            except OSError:
                await server.stop(grace=None)
                await door.stop()
                raise
            bound = door.port
        self._server = server
        self.door = door
        self._loop = asyncio.get_running_loop()
        self.port = bound
        stored = self.core.subscribe_events(self._on_arrival, kinds=_WAKE_KINDS)
        # a FIFO or lite delivery visible again in place is stored nowhere: told apart
        visible = self.core.subscribe(self._on_arrival, (VisibleAgain,))

        def unsubscribe() -> None:
            stored()
            visible()
        self._unsubscribe = unsubscribe

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.door is not None:
            await self.door.stop()
        if self._server is not None:
            await self._server.stop(grace=0.5)


class GrpcListenerThread(ListenerThread):
    """The GrpcServer on a thread of its own beside a core another thread drives (the pytest
    fixture's endpoint)."""

    name = "rocketmq5-grpc"

    def make_server(self):
        return GrpcServer(self.core, self.host, self.port, lambda: None, lock=self.lock)
