"""One Pulsar client connection's protocol state (reference pulsar-protocol.md §2–§5): the
handshake, requests matched to their responses by request id, producers' sends matched
to their receipts, and the MESSAGE frames of each consumer handed to it. Sans-I/O: a
link (links.py) moves the frames; everything here runs on the client runtime.

The codec is the broker front's (broker/fronts/pulsar/frames.py and schema.py): the
same frames and field numbers at both ends.
"""
from __future__ import annotations

import itertools
from typing import Callable

import rocketmq_emulator.broker.fronts.pulsar.schema as s
from rocketmq_emulator.broker.fronts.pulsar.frames import entry_of

from .errors import PulsarClientError, server_error

__all__ = ["Session", "Pending", "CLIENT_VERSION"]

CLIENT_VERSION = "rocketmq-emulator-python"


class Pending:
    """A request's outcome, filled on the runtime: ``done``, then ``reply`` or ``error``."""

    __slots__ = ("done", "reply", "error", "callback")

    def __init__(self, callback: Callable[["Pending"], None] | None = None) -> None:
        self.done = False
        self.reply = None
        self.error: Exception | None = None
        self.callback = callback

    def finish(self, reply=None, error: Exception | None = None) -> None:
        if self.done:
            return
        self.done, self.reply, self.error = True, reply, error
        if self.callback is not None:
            self.callback(self)


class Session:
    """``connect_link(on_frames, on_lost) -> link``; ``start()`` sends CONNECT."""

    def __init__(self, runtime, connect_link) -> None:
        self.runtime = runtime
        self._ids = itertools.count()
        self._request_ids = itertools.count(1)
        self._requests: dict[int, Pending] = {}
        self._receipts: dict[tuple[int, int], Pending] = {}
        self.consumers: dict[int, Callable] = {}          # consumer id -> on_message(cmd, frame)
        self.closed_by_broker: dict[int, Callable] = {}   # consumer or producer id -> on_close()
        self.connected = Pending()
        self.lost: str | None = None
        self.link = connect_link(self._on_frames, self._on_lost)

    def start(self) -> Pending:
        hello = s.BaseCommand(type=s.Type.CONNECT)
        hello.connect.client_version = CLIENT_VERSION
        hello.connect.protocol_version = s.PROTOCOL_VERSION
        hello.connect.auth_method_name = "none"
        self._write(hello)
        return self.connected

    def next_id(self) -> int:
        return next(self._ids)

    # -- out ------------------------------------------------------------------------------
    def request(self, field: str, type_: int, callback=None, **fields) -> Pending:
        """A request/response command (its request_id set here)."""
        pending = Pending(callback)
        request_id = next(self._request_ids)
        self._requests[request_id] = pending
        cmd = s.BaseCommand(type=type_)
        inner = getattr(cmd, field)
        inner.request_id = request_id
        for k, v in fields.items():
            _set(inner, k, v)
        self._write(cmd)
        return pending

    def command(self, field: str, type_: int, **fields) -> None:
        """A command without a response (FLOW, ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES)."""
        cmd = s.BaseCommand(type=type_)
        inner = getattr(cmd, field)
        for k, v in fields.items():
            _set(inner, k, v)
        self._write(cmd)

    def send(self, producer_id: int, sequence_id: int, metadata: bytes, payload: bytes,
             callback: Callable[[Pending], None] | None = None) -> Pending:
        pending = Pending(callback)
        self._receipts[(producer_id, sequence_id)] = pending
        cmd = s.BaseCommand(type=s.Type.SEND)
        cmd.send.producer_id, cmd.send.sequence_id, cmd.send.num_messages = producer_id, sequence_id, 1
        self._write(cmd, entry_of(metadata, payload, self.link.checksums))
        return pending

    def _write(self, cmd, entry: bytes | None = None) -> None:
        if self.lost is not None:
            raise PulsarClientError(f"the connection is gone: {self.lost}")
        self.link.write_frame(cmd.SerializeToString(), entry)

    def close(self) -> None:
        self.link.close()
        self._on_lost("the client closed the connection")

    # -- in -------------------------------------------------------------------------------
    def _on_frames(self, frames: list) -> None:
        for frame in frames:
            cmd = s.BaseCommand.FromString(frame.command)
            handler = _HANDLERS.get(cmd.type)
            if handler is not None:
                handler(self, cmd, frame)

    def _on_connected(self, cmd, frame) -> None:
        self.connected.finish(cmd.connected)

    def _on_ping(self, cmd, frame) -> None:
        self._write(s.BaseCommand(type=s.Type.PONG, pong={}))

    def _on_response(self, cmd, frame) -> None:
        """SUCCESS, PRODUCER_SUCCESS, LOOKUP and PARTITIONED_METADATA responses, ERROR."""
        inner = getattr(cmd, _RESPONSE_FIELD[cmd.type])
        pending = self._requests.pop(inner.request_id, None)
        if pending is None:
            return
        if cmd.type == s.Type.ERROR:
            pending.finish(error=server_error(inner.error, inner.message))
        else:
            pending.finish(inner)

    def _on_receipt(self, cmd, frame) -> None:
        r = cmd.send_receipt
        pending = self._receipts.pop((r.producer_id, r.sequence_id), None)
        if pending is not None:
            pending.finish(r.message_id)

    def _on_send_error(self, cmd, frame) -> None:
        e = cmd.send_error
        pending = self._receipts.pop((e.producer_id, e.sequence_id), None)
        if pending is not None:
            pending.finish(error=server_error(e.error, e.message))

    def _on_message(self, cmd, frame) -> None:
        deliver = self.consumers.get(cmd.message.consumer_id)
        if deliver is not None:
            deliver(cmd.message, frame)

    def _on_close(self, cmd, frame) -> None:
        key = cmd.close_consumer.consumer_id if cmd.type == s.Type.CLOSE_CONSUMER else cmd.close_producer.producer_id
        on_close = self.closed_by_broker.get(key)
        if on_close is not None:
            on_close()

    def _on_lost(self, why: str) -> None:
        if self.lost is not None:
            return
        self.lost = why or "the connection was lost"
        error = PulsarClientError(f"the connection is gone: {self.lost}")
        self.connected.finish(error=error)
        for pending in list(self._requests.values()) + list(self._receipts.values()):
            pending.finish(error=error)
        self._requests.clear()
        self._receipts.clear()


def _set(inner, key: str, value) -> None:
    if isinstance(value, list):
        target = getattr(inner, key)
        for item in value:
            if isinstance(item, dict):
                target.add(**item)
            else:
                target.append(item)
    elif isinstance(value, dict):
        sub = getattr(inner, key)
        for k, v in value.items():
            setattr(sub, k, v)
    else:
        setattr(inner, key, value)


_RESPONSE_FIELD = {s.Type.SUCCESS: "success", s.Type.ERROR: "error", s.Type.PRODUCER_SUCCESS: "producer_success",
                   s.Type.LOOKUP_RESPONSE: "lookupTopicResponse",
                   s.Type.PARTITIONED_METADATA_RESPONSE: "partitionMetadataResponse",
                   s.Type.GET_LAST_MESSAGE_ID_RESPONSE: "getLastMessageIdResponse"}
_HANDLERS = {s.Type.CONNECTED: Session._on_connected, s.Type.PING: Session._on_ping,
             s.Type.SEND_RECEIPT: Session._on_receipt, s.Type.SEND_ERROR: Session._on_send_error,
             s.Type.MESSAGE: Session._on_message, s.Type.CLOSE_CONSUMER: Session._on_close,
             s.Type.CLOSE_PRODUCER: Session._on_close,
             **{t: Session._on_response for t in _RESPONSE_FIELD}}
