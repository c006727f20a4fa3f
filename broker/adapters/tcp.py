"""The asyncio remoting server: frames in, BrokerCore, frames out. It decides nothing.

One endpoint serves name-server and broker requests. Per connection: bytes are fed to
a FrameDecoder, each request goes to ``core.handle`` in arrival order (pipelined; the
reply is written as soon as it exists), and after every batch the core's outgoing
queue (held-pull replies, NOTIFY_CONSUMER_IDS_CHANGED) is written to its connections.
One loop timer is armed at ``core.next_deadline()`` and ticks the core (real clock); on
a virtual clock time moves only by the clock-control request, and held pulls are
answered after at most ``virtual_hold_limit_s`` to 2x that of real time (clients time
their pulls out in real time: ali-ons after 30 s, while virtual time may stand still). A connection that sends
garbage is closed with a log line; every other connection keeps being served.
"""
from __future__ import annotations

import asyncio
import logging

from ..core import BrokerCore
from ..protocol import ProtocolError, RemotingCommand
from ..protocol.codec import FrameDecoder, encode

__all__ = ["RemotingServer", "DEFAULT_MAX_FRAME_SIZE"]

log = logging.getLogger("broker.tcp")
DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024
VIRTUAL_HOLD_LIMIT_S = 5.0


class _Connection(asyncio.Protocol):
    def __init__(self, server: "RemotingServer") -> None:
        self.server = server
        self.decoder = FrameDecoder(server.max_frame_size)
        self.transport: asyncio.Transport | None = None
        self.channel = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.channel = self.server.core.connect(f"{peer[0]}:{peer[1]}")
        self.server.connections[self.channel.id] = self
        sock = transport.get_extra_info("socket")
        if sock is not None:
            import socket

            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

    def data_received(self, data: bytes) -> None:
        try:
            commands = self.decoder.feed(data)
        except ProtocolError as exc:
            log.warning("closing %s: %s", self.channel.remote, exc)
            self.transport.close()
            return
        core = self.server.core
        out = []
        trace = log.isEnabledFor(logging.DEBUG)     # once per batch: the hot path stays lean
        for cmd in commands:
            if cmd.is_response:
                continue  # replies to our oneway notifications never come; ignore strays
            reply = core.handle(cmd, self.channel)
            if trace:
                log.debug("%s request %d opaque %d %s -> %s", self.channel.remote, cmd.code, cmd.opaque,
                          cmd.ext_fields, "held/oneway" if reply is None else f"{reply.code} {reply.remark or ''}")
            if reply is not None:
                out.append(encode(reply))
        if out:
            self.transport.write(b"".join(out))
        self.server.after_activity()

    def connection_lost(self, exc) -> None:
        self.server.connections.pop(self.channel.id, None)
        self.server.core.disconnect(self.channel)
        self.server.after_activity()

    def send(self, cmd: RemotingCommand) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(encode(cmd))


class RemotingServer:
    def __init__(self, core: BrokerCore, host: str = "127.0.0.1", port: int = 9876, *,
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
                 virtual_hold_limit_s: float = VIRTUAL_HOLD_LIMIT_S) -> None:
        self.core = core
        self.host = host
        self.port = port
        self.max_frame_size = max_frame_size
        self.connections: dict[int, _Connection] = {}
        self._server: asyncio.base_events.Server | None = None
        self._virtual = bool(getattr(core.clock, "is_virtual", False))
        self._timer: asyncio.TimerHandle | None = None
        self._armed_at: int | None = None
        self._hold_bound: asyncio.Task | None = None
        self.virtual_hold_limit_s = virtual_hold_limit_s

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Connection(self), self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        if self._virtual:
            self._hold_bound = asyncio.create_task(self._bound_holds_in_real_time())
        else:
            self._arm()     # messages the store already holds may be due

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def after_activity(self) -> None:
        """Write the core's outgoing commands and re-arm the timer."""
        for channel, cmd in self.core.take_outgoing():
            conn = self.connections.get(channel.id)
            if conn is not None:
                conn.send(cmd)
        if not self._virtual:
            self._arm()

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

    async def stop(self) -> None:
        for pending in (self._timer, self._hold_bound):
            if pending:
                pending.cancel()
        if self._server:
            self._server.close()
            for conn in list(self.connections.values()):
                conn.transport.close()
            await self._server.wait_closed()
