"""The Pulsar listener: TCP, frames in, broker/fronts/pulsar/front.py, frames out (issue 21).

Runs on the serve loop like the other listeners, so core calls never race; after each
frame, ``after_activity`` writes what the core emitted and re-arms the tick timer. A
connection that sends something that is not a Pulsar frame, or a frame over the limit,
is closed with one log line; other connections go on.

Limits (connection_guard.py, as the remoting front's): ``max_connections``, a CONNECT
within ``handshake_timeout_s`` of the accept, a frame finished within
``frame_timeout_s`` of its first byte, no byte either way for ``idle_timeout_s`` (the
clients ping every 30 s). Messages are pushed to a consumer only while its connection
has fewer than a quarter of ``max_outgoing_buffer`` bytes unsent (4 MiB by default),
as the Pulsar broker stops dispatching to a channel that is not writable: a consumer
that asks for a million messages and reads none makes the server hold that much, not
its backlog. Dispatch resumes when the server holds nothing more for it (the socket
took it all). All connections together hold at most ``max_pending_bytes`` (front.py's
PendingBytes; 64 MiB by default, --pulsar-max-pending-bytes): past it, dispatch pauses
for every connection that still has bytes waiting, and resumes as they drain.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Callable

from ...log_text import printable
from .frames import FRAME_PADDING, FrameDecoder, FrameError
from .front import Connection, PendingBytes, PulsarFront
from ...adapters.connection_guard import (DEFAULT_MAX_PENDING_BYTES, ConnectionGuard, ConnectionLimits,
                                          LimitedConnection)
from ...adapters.listener_thread import ListenerThread

__all__ = ["PulsarServer", "PulsarListenerThread"]

log = logging.getLogger("broker.pulsar")


class _Protocol(asyncio.Protocol, LimitedConnection):
    handshake_missing = "no CONNECT"

    def __init__(self, server: "PulsarServer") -> None:
        self.server = server
        self.decoder = FrameDecoder(server.core.config.pulsar_max_message_size + FRAME_PADDING)
        self.conn = Connection()
        self.transport = None
        self.admitted = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.remote = self.conn.peer = f"{peer[0]}:{peer[1]}" if peer else ""
        server = self.server
        if not server.guard.admit(self, server.loop_time()):
            self.conn.closed = True
            transport.abort()
            return
        self.admitted = True
        server.connections.add(self)
        self.conn.max_unsent = server.max_unsent
        self.conn.pending = server.pending
        # told (pause_writing) as soon as a write leaves bytes behind, and (resume_writing)
        # when the socket has taken them all: dispatch waits for the one, resumes on the other
        transport.set_write_buffer_limits(high=0)

    def connection_lost(self, exc) -> None:
        if not self.admitted:
            return
        self.server.guard.release(self)
        self.server.connections.discard(self)
        self.conn.closed = True
        self.conn.holds(0)                          # (what it held is given back to the total)
        self.server.pending.waiting.discard(self.conn)
        self.server.room_made(self.conn)
        if self.server.front is not None:
            with self.server.lock:
                self.server.front.disconnect(self.conn)
            self.server.pump()

    def data_received(self, data: bytes) -> None:
        if self.conn.closed:
            return
        now = self.last_io = self.server.loop_time()
        # the replies to every frame of this read go out in one write: a client with 32
        # sends in flight sends them back to back, and a write each was a syscall each
        replies: list[bytes] = []
        frames = ()
        try:
            frames = self.decoder.feed(data)
            handle, conn = self.server.front.handle, self.conn
            with self.server.lock:                  # (once per read, not per frame)
                for frame in frames:
                    replies += handle(conn, frame)
                    if conn.closed:
                        break
        except FrameError as exc:
            log.warning("Pulsar connection %s closed: %s", printable(self.conn.peer), printable(exc))
            self.conn.closed = True
        except Exception:
            log.exception("Pulsar connection %s closed: the broker failed on its request", printable(self.conn.peer))
            self.conn.closed = True
        finally:
            if replies:
                self.transport.write(b"".join(replies))
            self.server.pump()
            self.server.after_activity()
        if self.conn.connected and not self.served:
            self.handshaken = True
            self.server.guard.mark_served(self)
        if self.decoder.pending:
            if frames or self.frame_started is None:
                self.frame_started = now            # a new frame began in this data
        else:
            self.frame_started = None
        if self.conn.closed:
            self.transport.close()

    def flush(self) -> None:
        conn = self.conn
        out = conn.outgoing
        if out and not conn.closed:
            self.transport.write(b"".join(out))
            self.last_io = self.server.loop_time()
        out.clear()
        self._recount()

    def _recount(self) -> None:
        """What is unsent now is the write buffer; dispatch again to a connection passed
        over for its bound once it has room (the kernel may have taken what was written)."""
        conn = self.conn
        conn.holds(self.transport.get_write_buffer_size())
        if conn.closed:
            return
        if conn.starved and conn.unsent < conn.max_unsent:
            conn.starved = False
            self.server.redispatch(conn)
        self.server.room_made(conn)

    # asyncio calls these when the write buffer crosses the high / low water marks
    def pause_writing(self) -> None:
        self.conn.holds(max(self.conn.unsent, self.transport.get_write_buffer_size()))

    def resume_writing(self) -> None:
        self.last_io = self.server.loop_time()
        self._recount()

    # -- what the connection guard reads ---------------------------------------------------------
    def unfinished_bytes(self) -> int:
        return self.decoder.pending

    def drop(self) -> None:
        self.conn.closed = True
        self.transport.abort()


class PulsarServer:
    """``start()`` binds host:port (0: a free one, in ``port`` after); ``stop()``."""

    def __init__(self, core, host: str, port: int, after_activity: Callable[[], None], lock=None,
                 limits: ConnectionLimits | None = None,
                 max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES) -> None:
        """``lock``: held around every core call, when another thread drives the core too
        (the pytest fixture pulsar_endpoint); ``max_pending_bytes``: what all connections
        together may hold unsent (0: no bound)."""
        self.core = core
        self.lock = lock if lock is not None else contextlib.nullcontext()
        self.host = host
        self.port = port
        self.after_activity = after_activity
        self.limits = limits if limits is not None else ConnectionLimits()
        self.max_unsent = self.limits.max_outgoing_buffer // 4
        if max_pending_bytes < 0:
            raise ValueError(f"max_pending_bytes must be >= 0 (0 = no limit), got {max_pending_bytes}")
        self.pending = PendingBytes(max_pending_bytes)
        self.guard = ConnectionGuard(self.limits, log)
        self.front: PulsarFront | None = None
        self.connections: set[_Protocol] = set()
        self._server = None
        self._loop = None
        self._loop_thread = None
        self._pump_armed = False
        self._watch: asyncio.Task | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.loop_time = loop.time
        self._server = await loop.create_server(lambda: _Protocol(self), self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self.front = PulsarFront(self.core, f"pulsar://{self.host}:{self.port}")
        self.front.on_dirty = self._pump_soon
        self._loop = loop
        self._loop_thread = threading.get_ident()
        if self.limits.watch_interval_s is not None:
            self._watch = asyncio.create_task(self.guard.watch())

    def background_tasks(self) -> list[asyncio.Task]:
        return [self._watch] if self._watch is not None else []

    def _pump_soon(self) -> None:
        # (the core stored into a subscribed topic, maybe from another listener, a tick or
        # another thread's client: dispatch on this loop once the current call is over)
        if not self._pump_armed:
            self._pump_armed = True
            if threading.get_ident() == self._loop_thread:
                self._loop.call_soon(self.pump)
            else:                       # (a client of the in-process broker on another thread)
                self._loop.call_soon_threadsafe(self.pump)

    def redispatch(self, conn: Connection) -> None:
        """``conn`` has room again: dispatch to its consumers soon."""
        if self.front is not None:
            with self.lock:
                self.front.wake(conn)

    def room_made(self, conn: Connection) -> None:
        """``conn`` holds less now (or is gone): the connections passed over for the total
        get messages again once it is below the bound; ``conn`` itself once it holds
        nothing (a consumer that reads goes on past the bound)."""
        pending = self.pending
        if not pending.waiting:
            return
        if not pending.full():
            waiting = list(pending.waiting)
            pending.waiting.clear()
            for other in waiting:
                if not other.closed:
                    self.redispatch(other)
        elif conn.unsent == 0 and conn in pending.waiting:
            pending.waiting.discard(conn)
            self.redispatch(conn)

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
        if self._watch is not None:
            self._watch.cancel()
        if self._server is not None:
            self._server.close()
            for c in list(self.connections):
                if self.front is not None and not c.conn.closed:
                    with self.lock:
                        goodbye = self.front.closing(c.conn)
                    c.transport.write(b"".join(goodbye))    # (the broker closes them: CLOSE_* first)
                c.transport.close()
            await self._server.wait_closed()
        if self.front is not None:
            self.front.close()          # (the core's notifications and fault rules stop reaching it)


class PulsarListenerThread(ListenerThread):
    """The PulsarServer on a thread of its own beside a core another thread drives (the pytest
    fixture's endpoint)."""

    name = "pulsar"

    def make_server(self):
        return PulsarServer(self.core, self.host, self.port, lambda: None, lock=self.lock)

    @property
    def service_url(self) -> str:
        """"pulsar://HOST:PORT", what a Pulsar client takes."""
        return f"pulsar://{self.host}:{self.port}"
