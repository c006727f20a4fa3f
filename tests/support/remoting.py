"""A real RemotingServer on an ephemeral 127.0.0.1 port, run on its own event loop in
a background thread, and a raw-socket remoting client with bounded waits."""
from __future__ import annotations

import asyncio
import socket
import threading
import weakref

from rocketmq_emulator.broker.fronts.remoting.listener import RemotingServer
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.front import RemotingFront
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import FrameDecoder, encode


class ServerThread:
    def __init__(self, core: BrokerCore, max_frame_size: int = 16 * 1024 * 1024, **server_options):
        self.core = core
        self.loop = asyncio.new_event_loop()
        self.server = RemotingServer(core, "127.0.0.1", 0, max_frame_size=max_frame_size, **server_options)
        started = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(self.server.start())
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert started.wait(10), "server did not start"
        core.config.listen_port = self.server.port

    @property
    def port(self) -> int:
        return self.server.port

    def call_in_loop(self, fn):
        """Run fn() on the server's loop (the core is single-threaded) and return its result."""
        fut = asyncio.run_coroutine_threadsafe(_wrap(fn), self.loop)
        return fut.result(10)

    def stop(self):
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


async def _wrap(fn):
    return fn()


class RawClient:
    def __init__(self, port: int, timeout: float = 5.0, *, rcvbuf: int | None = None):
        """``rcvbuf``: the socket's receive buffer, set before it connects (set after,
        loopback autotuning may already have offered the server a window of many MiB)."""
        if rcvbuf is None:
            self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        else:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            self.sock.settimeout(timeout)
            self.sock.connect(("127.0.0.1", port))
        self.decoder = FrameDecoder()
        self.pending: list[RemotingCommand] = []

    def send_bytes(self, data: bytes):
        self.sock.sendall(data)

    def send(self, cmd: RemotingCommand):
        self.sock.sendall(encode(cmd))

    def recv(self) -> RemotingCommand:
        while not self.pending:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed by server")
            self.pending.extend(self.decoder.feed(data))
        return self.pending.pop(0)

    def call(self, cmd: RemotingCommand) -> RemotingCommand:
        self.send(cmd)
        while True:
            reply = self.recv()
            if reply.opaque == cmd.opaque and reply.is_response:
                return reply

    def closed_by_server(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, socket.timeout):
            return True

    def close(self):
        self.sock.close()


_FRONTS: "weakref.WeakKeyDictionary[BrokerCore, RemotingFront]" = weakref.WeakKeyDictionary()


def front_of(core: BrokerCore) -> RemotingFront:
    """The 4.x front a test addresses ``core`` through (one per core, as one driver per
    core has): ``front_of(core).handle(cmd, channel)``, ``.take_outgoing()``."""
    front = _FRONTS.get(core)
    if front is None:
        front = _FRONTS[core] = RemotingFront(core)
    return front
