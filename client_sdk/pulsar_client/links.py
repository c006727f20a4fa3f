"""How a Pulsar client session reaches a broker: frames out, frames in, on the client
runtime (client_sdk/runtime.py), whatever the wire.

``InProcessLink`` hands each frame to the broker's own Pulsar front on an in-process
core (the same front ``serve`` runs, without a socket): one codec, two ends. Everything
happens on the runtime's thread, on the core's clock, so a virtual clock moves nack
delays, ack timeouts and delayed deliveries alike.

``TcpLink`` is a socket to a Pulsar broker (``rocketmq-emulator serve``'s Pulsar port or
a real Pulsar): writes from the runtime's thread, one reader thread that decodes frames
and hands them to the runtime with ``call_soon_threadsafe``, as the 4.x TCP transport
does; the runtime is on the real clock.
"""
from __future__ import annotations

import contextlib
import logging
import socket
import threading
from typing import Callable

from rocketmq_emulator.broker.fronts.pulsar.frames import Frame, FrameDecoder, FrameError, encode_payload, encode_simple
from rocketmq_emulator.broker.fronts.pulsar.front import Connection, PulsarFront

from .errors import PulsarClientError

__all__ = ["InProcessLink", "TcpLink", "parse_service_url"]

log = logging.getLogger("client_sdk.pulsar")

FrameHandler = Callable[[list], None]        # frames (broker_front.frames.Frame) from the broker
IN_PROCESS_URL = "pulsar://in-process:6650"


def parse_service_url(url: str) -> tuple[str, int]:
    """``pulsar://host:port`` (port 6650 when left out) -> (host, port); ValueError else."""
    if not isinstance(url, str) or not url.startswith("pulsar://"):
        raise ValueError(f"a Pulsar service URL looks like pulsar://host:6650, not {url!r}")
    rest = url[len("pulsar://"):].rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep:
        host, port = rest, "6650"
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"a Pulsar service URL looks like pulsar://host:6650, not {url!r}")
    return host, int(port)


class _FrontOfCore:
    """One Pulsar front per in-process core, shared by the links of its clients: it
    pumps on the runtime when a subscribed topic has something new."""

    def __init__(self, embedded) -> None:
        self.embedded = embedded
        self.front = PulsarFront(embedded.core, IN_PROCESS_URL)
        self.front.on_dirty = self._pump_soon
        self.links: dict[Connection, "InProcessLink"] = {}
        self._armed = False

    def _pump_soon(self) -> None:
        if not self._armed:
            self._armed = True
            self.embedded.runtime.call_soon(self.pump)

    def pump(self) -> None:
        self._armed = False
        with self.locked():
            self.front.pump()
        for conn, link in list(self.links.items()):     # (another front may have filled one too)
            if conn.outgoing:
                link.deliver_outgoing()

    def locked(self):
        lock = self.embedded.hub.lock
        return lock if lock is not None else contextlib.nullcontext()


def _front_of(embedded) -> _FrontOfCore:
    shared = getattr(embedded, "_pulsar_front", None)
    if shared is None:
        shared = embedded._pulsar_front = _FrontOfCore(embedded)
    return shared


class InProcessLink:
    """A session's connection to the Pulsar front of ``embedded``'s core. Frames go over
    as objects and without checksums (there is no wire to damage them), and the front's
    answer to a command is handled before ``write_frame`` returns, as a reply that was
    already on the socket would be."""

    checksums = False

    def __init__(self, embedded, on_frames: FrameHandler) -> None:
        self.embedded = embedded
        self.runtime = embedded.runtime
        self.on_frames = on_frames
        self.shared = _front_of(embedded)
        self.conn = Connection(peer="in-process", checksums=False)
        self.shared.links[self.conn] = self
        self.closed = False

    def write_frame(self, command: bytes, entry: bytes | None) -> None:
        if self.closed:
            raise PulsarClientError("the Pulsar connection is closed")
        with self.shared.locked():
            replies = self.shared.front.handle(self.conn, Frame(command, entry))
        if replies:
            self.on_frames(FrameDecoder().feed(replies[0] if len(replies) == 1 else b"".join(replies)))
        if self.conn.outgoing:
            self.deliver_outgoing()

    def deliver_outgoing(self) -> None:
        data = b"".join(self.conn.outgoing)
        self.conn.outgoing.clear()
        if not self.closed:
            self.runtime.call_soon(self.on_frames, FrameDecoder().feed(data))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.shared.links.pop(self.conn, None)
        with self.shared.locked():
            self.shared.front.disconnect(self.conn)
        self.shared._pump_soon()


class TcpLink:
    """A socket to ``host:port``; frames from the broker reach ``on_frames`` on ``runtime``."""

    def __init__(self, runtime, host: str, port: int, on_frames: FrameHandler, on_lost: Callable[[str], None],
                 connect_timeout_s: float = 3.0) -> None:
        self.runtime = runtime
        self.on_frames = on_frames
        self.on_lost = on_lost
        try:
            self.sock = socket.create_connection((host, port), timeout=connect_timeout_s)
        except OSError as exc:
            raise PulsarClientError(f"cannot connect to pulsar://{host}:{port}: {exc.strerror or exc}") from None
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.closed = False
        self.checksums = True
        self._write_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read_loop, name=f"pulsar-reader-{host}:{port}", daemon=True)
        self._reader.start()

    def write_frame(self, command: bytes, entry: bytes | None) -> None:
        self.write(encode_simple(command) if entry is None else encode_payload(command, entry=entry))

    def write(self, data: bytes) -> None:
        if self.closed:
            raise PulsarClientError("the Pulsar connection is closed")
        try:
            with self._write_lock:
                self.sock.sendall(data)
        except OSError as exc:
            self._lost(f"write failed: {exc.strerror or exc}")
            raise PulsarClientError(f"the Pulsar connection failed: {exc.strerror or exc}") from None

    def _read_loop(self) -> None:
        decoder = FrameDecoder()
        why = "the broker closed the connection"
        try:
            while True:
                data = self.sock.recv(256 * 1024)
                if not data:
                    break
                frames = decoder.feed(data)
                if frames:
                    self.runtime.call_soon_threadsafe(self.on_frames, frames)
        except FrameError as exc:
            why = f"the broker sent something that is not a Pulsar frame: {exc}"
        except OSError as exc:
            why = "" if self.closed else f"read failed: {exc.strerror or exc}"
        if not self.closed:
            self.runtime.call_soon_threadsafe(self._lost, why)

    def _lost(self, why: str) -> None:
        if not self.closed:
            self.close()
            self.on_lost(why)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
