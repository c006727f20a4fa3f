"""The Pulsar listener: TCP, frames in, broker/pulsar_front/front.py, frames out (issue 21).

Runs on the serve loop like the other listeners, so core calls never race; after each
frame, ``after_activity`` writes what the core emitted and re-arms the tick timer. A
connection that sends something that is not a Pulsar frame, or a frame over the limit,
is closed with one log line; other connections go on.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Callable

from ..pulsar_front.frames import DEFAULT_MAX_MESSAGE_SIZE, FRAME_PADDING, FrameDecoder, FrameError
from ..pulsar_front.front import Connection, PulsarFront

__all__ = ["PulsarServer"]

log = logging.getLogger("broker.pulsar")


class _Protocol(asyncio.Protocol):
    def __init__(self, server: "PulsarServer") -> None:
        self.server = server
        self.decoder = FrameDecoder(DEFAULT_MAX_MESSAGE_SIZE + FRAME_PADDING)
        self.conn = Connection()
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.conn.peer = f"{peer[0]}:{peer[1]}" if peer else ""
        self.server.connections.add(self)

    def connection_lost(self, exc) -> None:
        self.server.connections.discard(self)
        self.conn.closed = True
        if self.server.front is not None:
            with self.server.lock:
                self.server.front.disconnect(self.conn)
            self.server.pump()

    def data_received(self, data: bytes) -> None:
        # the replies to every frame of this read go out in one write: a client with 32
        # sends in flight sends them back to back, and a write each was a syscall each
        replies: list[bytes] = []
        try:
            frames = self.decoder.feed(data)
            for frame in frames:
                with self.server.lock:
                    replies += self.server.front.handle(self.conn, frame)
                if self.conn.closed:
                    break
        except FrameError as exc:
            log.warning("Pulsar connection %s closed: %s", self.conn.peer, exc)
            self.conn.closed = True
        except Exception:
            log.exception("Pulsar connection %s closed: the broker failed on its request", self.conn.peer)
            self.conn.closed = True
        finally:
            if replies:
                self.transport.write(b"".join(replies))
            self.server.pump()
            self.server.after_activity()
        if self.conn.closed:
            self.transport.close()

    def flush(self) -> None:
        out = self.conn.outgoing
        if out and not self.conn.closed:
            self.transport.write(b"".join(out))
        out.clear()


class PulsarServer:
    """``start()`` binds host:port (0: a free one, in ``port`` after); ``stop()``."""

    def __init__(self, core, host: str, port: int, after_activity: Callable[[], None], lock=None) -> None:
        """``lock``: held around every core call, when another thread drives the core too
        (the pytest fixture pulsar_endpoint)."""
        self.core = core
        self.lock = lock if lock is not None else contextlib.nullcontext()
        self.host = host
        self.port = port
        self.after_activity = after_activity
        self.front: PulsarFront | None = None
        self.connections: set[_Protocol] = set()
        self._server = None
        self._loop = None
        self._loop_thread = None
        self._pump_armed = False

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Protocol(self), self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self.front = PulsarFront(self.core, f"pulsar://{self.host}:{self.port}")
        self.front.on_dirty = self._pump_soon
        self._loop = loop
        self._loop_thread = threading.get_ident()

    def _pump_soon(self) -> None:
        # (the core stored into a subscribed topic, maybe from another listener, a tick or
        # another thread's client: dispatch on this loop once the current call is over)
        if not self._pump_armed:
            self._pump_armed = True
            if threading.get_ident() == self._loop_thread:
                self._loop.call_soon(self.pump)
            else:                       # (a client of the in-process broker on another thread)
                self._loop.call_soon_threadsafe(self.pump)

    def pump(self) -> None:
        """Send what the subscriptions have for their consumers now."""
        self._pump_armed = False
        if self.front is None:
            return
        try:
            with self.lock:
                self.front.pump()
        except Exception:
            log.exception("Pulsar dispatch failed; it is tried again on the next activity")
            return
        for proto in list(self.connections):       # (dispatch, and commands for other clients)
            if proto.conn.outgoing:
                proto.flush()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for c in list(self.connections):
                if self.front is not None and not c.conn.closed:
                    with self.lock:
                        goodbye = self.front.closing(c.conn)
                    c.transport.write(b"".join(goodbye))    # (the broker closes them: CLOSE_* first)
                c.transport.close()
            await self._server.wait_closed()
