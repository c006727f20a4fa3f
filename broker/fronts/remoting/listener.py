"""The asyncio remoting server: frames in, BrokerCore, frames out. It decides nothing.

One endpoint serves name-server and broker requests. Per connection: bytes are fed to
a FrameDecoder, each request goes to the core's 4.x front (``RemotingFront.handle``) in
arrival order (pipelined; the reply is written as soon as it exists), and after every
batch the front's outgoing commands (held-pull replies, NOTIFY_CONSUMER_IDS_CHANGED) are
written to their connections.
One loop timer is armed at ``core.next_deadline()`` and ticks the core (real clock); on
a virtual clock time moves only by the clock-control request, and held pulls are
answered after at most ``virtual_hold_limit_s`` to 2x that of real time (clients time
their pulls out in real time: ali-ons after 30 s, while virtual time may stand still). A connection that sends
garbage is closed with a log line; every other connection keeps being served.

What one client can make the server hold is bounded by connection_guard.py's limits
(each logs one line when it acts; 0 turns a limit off): a connection that sends no byte
within ``handshake_timeout_s`` of its accept, a frame unfinished ``frame_timeout_s``
after its first byte, no byte either way for ``idle_timeout_s`` (RocketMQ's
serverChannelMaxIdleTimeSeconds, 120; a connection with a held pull is waiting, not
idle) are closed; at ``max_connections`` the oldest connection that never sent a
request makes room, else a new one is closed as soon as it is accepted. And
``max_outgoing_buffer``, replies a client leaves unread: once that many bytes wait in a
connection's write buffer, its requests stop being handled and read (TCP pushes back on
the client) until it has read down to a quarter of it; nothing is dropped. Replies to
requests already taken (held pulls coming due) that find twice that much unread close
the connection instead: the client reconnects and pulls again.

The timeouts run on the loop's clock, which is real even when the core's is virtual.
"""
from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque

from ...core import BrokerCore
from ...log_text import printable
from .front import RemotingFront
from .protocol import ProtocolError, RemotingCommand
from .protocol.codec import FrameDecoder, encode
from ...adapters.connection_guard import (DEFAULT_FRAME_TIMEOUT_S, DEFAULT_HANDSHAKE_TIMEOUT_S, DEFAULT_IDLE_TIMEOUT_S,
                               DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_OUTGOING_BUFFER, ConnectionGuard,
                               ConnectionLimits, LimitedConnection)

__all__ = ["RemotingServer", "DEFAULT_MAX_FRAME_SIZE", "DEFAULT_MAX_CONNECTIONS", "DEFAULT_IDLE_TIMEOUT_S",
           "DEFAULT_FRAME_TIMEOUT_S", "DEFAULT_HANDSHAKE_TIMEOUT_S", "DEFAULT_MAX_OUTGOING_BUFFER"]

log = logging.getLogger("broker.tcp")
DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024
VIRTUAL_HOLD_LIMIT_S = 5.0


class _Connection(asyncio.Protocol, LimitedConnection):
    def __init__(self, server: "RemotingServer") -> None:
        self.server = server
        self.decoder = FrameDecoder(server.max_frame_size)
        self.transport: asyncio.Transport | None = None
        self.channel = None                 # None: refused (over max_connections) or not yet made
        self.awaiting: set[int] = set()     # opaques of requests whose reply comes later (held pulls)
        self.backlog: deque[RemotingCommand] = deque()   # decoded, not handled: replies wait unread
        self.writing_paused = False
        self._pause_logged = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        server = self.server
        peer = transport.get_extra_info("peername") or ("?", 0)
        remote = self.remote = f"{peer[0]}:{peer[1]}"
        if not server.guard.admit(self, server.loop_time()):
            transport.abort()
            return
        self.channel = server.front.connect(remote)
        server.connections[self.channel.id] = self
        if server.max_outgoing_buffer:
            transport.set_write_buffer_limits(high=server.max_outgoing_buffer, low=server.max_outgoing_buffer // 4)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

    def data_received(self, data: bytes) -> None:
        if self.channel is None:
            return
        now = self.last_io = self.server.loop_time()
        self.handshaken = True
        try:
            commands = self.decoder.feed(data)
        except ProtocolError as exc:
            log.warning("closing %s: %s", printable(self.channel.remote), printable(exc))
            self.transport.close()
            return
        if commands and not self.served:
            self.server.guard.mark_served(self)
        if self.decoder.pending:
            if commands or self.frame_started is None:
                self.frame_started = now        # a new frame began in this data
        else:
            self.frame_started = None
        if self.backlog:                        # (reading is paused meanwhile; kept in order regardless)
            self.backlog.extend(commands)
        elif commands:
            self._handle(commands)
        self.server.after_activity()

    def _handle(self, commands) -> None:
        """Handle requests in order while fewer than ``max_outgoing_buffer`` bytes of
        replies wait unread; the rest go to the backlog, handled on ``resume_writing``.
        Replies are written in batches, so the limit is checked once per batch."""
        front, channel, transport = self.server.front, self.channel, self.transport
        limit = self.server.max_outgoing_buffer
        room = limit - transport.get_write_buffer_size() if limit else -1
        out: list[bytes] = []
        size = 0
        trace = log.isEnabledFor(logging.DEBUG)     # once per batch: the hot path stays lean
        for i, cmd in enumerate(commands):
            if cmd.is_response:
                continue  # replies to our oneway notifications never come; ignore strays
            reply = front.handle(cmd, channel)
            if trace:
                log.debug("%s request %d opaque %d %s -> %s", channel.remote, cmd.code, cmd.opaque,
                          cmd.ext_fields, "held/oneway" if reply is None else f"{reply.code} {reply.remark or ''}")
            if reply is None:
                if not cmd.is_oneway:
                    self.awaiting.add(cmd.opaque)
                continue
            frame = encode(reply)
            out.append(frame)
            size += len(frame)
            if 0 <= room <= size:
                transport.write(b"".join(out))
                out, size = [], 0
                if self.writing_paused or transport.is_closing():
                    self.backlog.extend(commands[i + 1:])
                    return
                room = limit - transport.get_write_buffer_size()
        if out:
            transport.write(b"".join(out))
            self.last_io = self.server.loop_time()

    # asyncio calls these when the write buffer crosses the high / low water marks.
    def pause_writing(self) -> None:
        self.writing_paused = True
        self.transport.pause_reading()
        if not self._pause_logged:
            self._pause_logged = True
            log.info("pausing requests from %s: %d bytes of its replies wait to be read (max outgoing buffer %d); "
                     "said once per connection", self.channel.remote, self.transport.get_write_buffer_size(),
                     self.server.max_outgoing_buffer)

    def resume_writing(self) -> None:
        self.writing_paused = False
        self.last_io = self.server.loop_time()
        if self.backlog:
            waiting = list(self.backlog)
            self.backlog.clear()
            self._handle(waiting)
            self.server.after_activity()
        if not self.writing_paused and not self.transport.is_closing():
            self.transport.resume_reading()

    def connection_lost(self, exc) -> None:
        if self.channel is None:
            return
        self.backlog.clear()
        self.server.guard.release(self)
        self.server.connections.pop(self.channel.id, None)
        self.server.core.disconnect(self.channel)
        self.server.after_activity()

    def send(self, cmd: RemotingCommand) -> None:
        """Write a command the core produced later (a held pull's reply, a notification)."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if cmd.is_response:
            self.awaiting.discard(cmd.opaque)
        limit = self.server.max_outgoing_buffer
        unread = transport.get_write_buffer_size()
        if limit and unread >= 2 * limit:
            log.warning("closing %s: %d bytes of replies unread, twice the max outgoing buffer (%d)",
                        self.channel.remote, unread, limit)
            transport.abort()
            return
        transport.write(encode(cmd))
        self.last_io = self.server.loop_time()

    # -- what the connection guard reads ---------------------------------------------------------
    def busy(self) -> bool:
        return bool(self.awaiting)

    def unfinished_bytes(self) -> int:
        return self.decoder.pending

    def drop(self) -> None:
        if self.transport.get_write_buffer_size():
            self.transport.abort()          # close() would wait for a reader that is not there
        else:
            self.transport.close()


class RemotingServer:
    def __init__(self, core: BrokerCore, host: str = "127.0.0.1", port: int = 9876, *,
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
                 virtual_hold_limit_s: float = VIRTUAL_HOLD_LIMIT_S,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS,
                 idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
                 frame_timeout_s: float = DEFAULT_FRAME_TIMEOUT_S,
                 handshake_timeout_s: float = DEFAULT_HANDSHAKE_TIMEOUT_S,
                 max_outgoing_buffer: int = DEFAULT_MAX_OUTGOING_BUFFER) -> None:
        self.limits = ConnectionLimits(max_connections=max_connections, handshake_timeout_s=handshake_timeout_s,
                                       idle_timeout_s=idle_timeout_s, frame_timeout_s=frame_timeout_s,
                                       max_outgoing_buffer=max_outgoing_buffer)
        self.core = core
        self.front = RemotingFront(core)
        self.host = host
        self.port = port
        self.max_frame_size = max_frame_size
        self.max_outgoing_buffer = max_outgoing_buffer
        self.guard = ConnectionGuard(self.limits, log)
        self.connections: dict[int, _Connection] = {}
        self._server: asyncio.base_events.Server | None = None
        self._virtual = bool(getattr(core.clock, "is_virtual", False))
        self._timer: asyncio.TimerHandle | None = None
        self._armed_at: int | None = None
        self._hold_bound: asyncio.Task | None = None
        self._watch: asyncio.Task | None = None
        self.virtual_hold_limit_s = virtual_hold_limit_s

    async def start(self, sock: socket.socket | None = None) -> None:
        """Listen on host:port, or on ``sock`` when given (bound already: a broker that
        starts again binds its port before its start is answered)."""
        loop = asyncio.get_running_loop()
        self.loop_time = loop.time
        if sock is not None:
            self._server = await loop.create_server(lambda: _Connection(self), sock=sock)
        else:
            self._server = await loop.create_server(lambda: _Connection(self), self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        # a hold rule removed (by any request, on any clock) answers its pulls now
        self.front.held_pulls.wake = lambda fn: loop.call_soon_threadsafe(self._run_and_write, fn)
        if self._virtual:
            self._hold_bound = asyncio.create_task(self._bound_holds_in_real_time())
        else:
            self._arm()     # messages the store already holds may be due
        if self.limits.watch_interval_s is not None:
            self._watch = asyncio.create_task(self.guard.watch())

    @property
    def listening(self) -> bool:
        return self._server is not None and self._server.is_serving()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def after_activity(self) -> None:
        """Write the core's outgoing commands and re-arm the timer."""
        for channel, cmd in self.front.take_outgoing():
            conn = self.connections.get(channel.id)
            if conn is not None:
                conn.send(cmd)
        if not self._virtual:
            self._arm()

    def _run_and_write(self, fn) -> None:
        fn()
        self.after_activity()

    def _arm(self) -> None:
        """One loop timer at the core's next deadline. It is moved only when the
        deadline comes earlier: a later one is picked up when the armed timer fires
        (tick does nothing early), so a burst of requests costs no timer churn."""
        deadline = self.core.next_deadline()
        armed = self._armed_at
        if armed is not None and (deadline is None or armed <= deadline):
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._armed_at = None
        if deadline is None:
            return
        delay = max(0.0, (deadline - self.core.clock.now_ms()) / 1000)
        self._timer = asyncio.get_running_loop().call_later(delay, self._fire)
        self._armed_at = deadline

    def _fire(self) -> None:
        self._timer = None
        self._armed_at = None
        self.core.tick()
        self.after_activity()

    async def _bound_holds_in_real_time(self) -> None:
        while True:
            mark = self.core.hold_mark()
            await asyncio.sleep(self.virtual_hold_limit_s)
            self.core.answer_holds_before(mark)
            self.after_activity()

    def background_tasks(self) -> list[asyncio.Task]:
        """The tasks ``start`` made, which run until ``stop`` / ``close_now``."""
        return [t for t in (self._hold_bound, self._watch) if t is not None]

    def close_now(self) -> None:
        """Stop listening and drop every connection at once, from the loop's thread (a
        cluster broker stopped by a request: its clients see connections refused)."""
        for pending in (self._timer, self._hold_bound, self._watch):
            if pending:
                pending.cancel()
        self._timer = self._armed_at = self._hold_bound = self._watch = None
        if self._server:
            self._server.close()
            self._server = None
        for conn in list(self.connections.values()):
            conn.transport.abort()

    async def stop(self) -> None:
        for pending in (self._timer, self._hold_bound, self._watch):
            if pending:
                pending.cancel()
        if self._server:
            self._server.close()
            for conn in list(self.connections.values()):
                if conn.transport.get_write_buffer_size():
                    conn.transport.abort()      # its client reads no more: close() would wait for ever
                else:
                    conn.transport.close()
            await self._server.wait_closed()
