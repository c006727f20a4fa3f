"""The 5.x front's door: the listening socket in front of gRPC's own server, so that its
connections obey connection_guard.py's limits as the other fronts' do (issue 46, item 5).

gRPC's core accepts connections itself and offers only a cap that refuses at the limit
(``grpc.max_allowed_incoming_connections``): 1,000 sockets that never sent a byte, each
opened again as it timed out, kept every real client out. gRPC cannot be handed a socket
accepted elsewhere, so the door accepts on the public port and relays each connection's
bytes to the gRPC server, which listens on a Unix socket in a directory only this user
may enter (nobody goes round the door). A connection reaches gRPC with its first byte:
a silent socket costs gRPC nothing.

The door reads the HTTP/2 framing of a connection's start only: the client preface is
its handshake (within ``handshake_timeout_s``), its first HEADERS frame its first
request — until then it is the first to be closed at ``max_connections``. Idleness stays
gRPC's (``grpc.max_connection_idle_ms`` knows a connection's open calls; the door does
not). The relay reads from one side no faster than the other side takes (each
transport's write limits pause the other's reading), so HTTP/2 flow control still bounds
what a client leaves unread.
"""
from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile

from ...adapters.connection_guard import ConnectionGuard, ConnectionLimits, LimitedConnection
from ...log_text import printable

__all__ = ["GrpcDoor"]

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"      # RFC 9113 §3.4: what an HTTP/2 client sends first
_FRAME_HEAD = 9                                     # length (3 bytes), type, flags, stream id (4)
_HEADERS = 0x1


class _Client(asyncio.Protocol, LimitedConnection):
    """One accepted connection, relayed to gRPC once it sends its first byte."""

    handshake_missing = "no HTTP/2 preface"

    def __init__(self, door: "GrpcDoor") -> None:
        self.door = door
        self.transport = None
        self.inner: asyncio.Transport | None = None     # the relay's connection to gRPC
        self.early: list[bytes] | None = None           # bytes read while it is being made
        self.scanning = True                            # reading the framing (until the first request)
        self.head = b""                                 # the unfinished preface or frame header read
        self.skip = 0                                   # bytes of the current frame's payload still to come

    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.remote = f"{peer[0]}:{peer[1]}" if peer else "?"
        if not self.door.guard.admit(self, self.door.loop_time()):
            transport.abort()
            return
        self.door.clients.add(self)

    def data_received(self, data: bytes) -> None:
        self.last_io = self.door.loop_time()
        if self.scanning:
            self._scan(data)
        if self.inner is not None:
            self.inner.write(data)
        elif self.early is not None:
            self.early.append(data)
        else:                                           # the first bytes: make the relay, hold them meanwhile
            self.early = [data]
            self.transport.pause_reading()
            self.door.relay(self)

    def relayed(self, inner: asyncio.Transport) -> None:
        """The connection to gRPC is up: what was read meanwhile goes, and reading resumes."""
        if self.transport.is_closing():
            inner.close()
            return
        self.inner = inner
        self.transport.resume_reading()
        inner.write(b"".join(self.early))
        self.early = None

    def _scan(self, data: bytes) -> None:
        """Follow the framing: the preface marks the handshake, a HEADERS frame (a call)
        marks the connection as served. Frame payloads are skipped, never kept."""
        if not self.handshaken:
            data = self.head + data
            if len(data) < len(_PREFACE):
                if _PREFACE.startswith(data):
                    self.head = data
                else:                                   # not HTTP/2: gRPC answers it
                    self.scanning = False
                return
            if not data.startswith(_PREFACE):
                self.scanning = False
                return
            self.handshaken = True
            data, self.head = data[len(_PREFACE):], b""
        if self.skip >= len(data):
            self.skip -= len(data)
            return
        data = self.head + data[self.skip:]
        at = 0
        while at + _FRAME_HEAD <= len(data):
            if data[at + 3] == _HEADERS:
                self.scanning = False
                self.head = b""
                self.door.guard.mark_served(self)
                return
            at += _FRAME_HEAD + int.from_bytes(data[at:at + 3], "big")
        self.skip, self.head = max(at - len(data), 0), data[at:]

    def connection_lost(self, exc) -> None:
        self.door.guard.release(self)
        self.door.clients.discard(self)
        if self.inner is not None:
            self.inner.close()

    # the client's side of the relay is full: read no more from gRPC until it drains
    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_reading()

    def resume_writing(self) -> None:
        if self.inner is not None and not self.inner.is_closing():
            self.inner.resume_reading()

    # -- what the connection guard reads ---------------------------------------------------------
    def busy(self) -> bool:
        return True                 # idleness is gRPC's to judge (it knows the open calls)

    def drop(self) -> None:
        self.transport.abort()
        if self.inner is not None:
            self.inner.abort()


class _Inner(asyncio.Protocol):
    """The relay's connection to gRPC, for one client."""

    def __init__(self, client: _Client) -> None:
        self.client = client

    def data_received(self, data: bytes) -> None:
        client = self.client
        client.last_io = client.door.loop_time()
        client.transport.write(data)

    def connection_lost(self, exc) -> None:
        self.client.transport.close()

    # gRPC's side of the relay is full: read no more from the client until it drains
    def pause_writing(self) -> None:
        self.client.transport.pause_reading()

    def resume_writing(self) -> None:
        if not self.client.transport.is_closing():
            self.client.transport.resume_reading()


class GrpcDoor:
    """``inner_address``: where gRPC listens (give it to ``add_insecure_port`` before
    ``start``); ``start()`` binds host:port (0: a free one, in ``port`` after)."""

    def __init__(self, host: str, port: int, limits: ConnectionLimits, logger: logging.Logger) -> None:
        self.host = host
        self.port = port
        self.limits = limits
        self.log = logger
        self.guard = ConnectionGuard(limits, logger)
        self.clients: set[_Client] = set()
        self._dir = tempfile.mkdtemp(prefix="rocketmq-emulator-grpc-")      # mode 0700
        self._path = os.path.join(self._dir, "grpc.sock")
        self._server: asyncio.base_events.Server | None = None
        self._watch: asyncio.Task | None = None
        self._relaying: set[asyncio.Task] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def inner_address(self) -> str:
        return f"unix:{self._path}"

    def loop_time(self) -> float:
        return self._loop.time()

    async def start(self) -> None:
        """Raises OSError (errno and strerror set) when the port cannot be had."""
        self._loop = asyncio.get_running_loop()
        self._server = await self._loop.create_server(lambda: _Client(self), self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        if self.limits.watch_interval_s is not None:
            self._watch = asyncio.create_task(self.guard.watch())

    def relay(self, client: _Client) -> None:
        task = asyncio.ensure_future(self._connect(client))
        self._relaying.add(task)
        task.add_done_callback(self._relaying.discard)

    async def _connect(self, client: _Client) -> None:
        try:
            inner, _ = await self._loop.create_unix_connection(lambda: _Inner(client), self._path)
        except OSError as exc:          # gRPC is stopping (or gone): this client cannot be served
            self.log.warning("closing %s: cannot reach the gRPC server (%s)", printable(client.remote),
                             printable(exc.strerror or exc))
            client.transport.abort()
            return
        client.relayed(inner)

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        for task in list(self._relaying):
            task.cancel()
        if self._server is not None:
            self._server.close()
            for client in list(self.clients):
                client.drop()
            await self._server.wait_closed()
        shutil.rmtree(self._dir, ignore_errors=True)
