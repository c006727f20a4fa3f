"""What answers on a port that does not speak RocketMQ remoting, so the CLI can say so
(``--server`` pointed at the HTTP, gRPC or Pulsar port, or at a TLS listener) instead of
a frame-length error.

First the bytes the server sent back to our remoting request are read: ``HTTP/`` is an
HTTP server, an HTTP/2 frame (SETTINGS or GOAWAY on stream 0) a gRPC server, a TLS
record (alert or handshake) a TLS listener. A server that closes or resets without a
byte (Pulsar and TLS servers do, on a frame they cannot read) is asked twice more, each
on a new connection: a TLS handshake, then a Pulsar CONNECT, which a Pulsar broker
answers with CONNECTED.
"""
from __future__ import annotations

import socket
import ssl
import struct

__all__ = ["foreign_protocol", "wrong_port_text", "remoting_server_on"]

_HTTP2_SETTINGS, _HTTP2_GOAWAY = 0x04, 0x07
_TLS_ALERT, _TLS_HANDSHAKE = 0x15, 0x16
_PULSAR_CONNECT, _PULSAR_CONNECTED = 2, 3


def foreign_protocol(host: str, port: int, received: bytes, timeout: float) -> str | None:
    """The protocol that answered (``received``: its first bytes, b"" when it closed
    without a word), or None when it is none of those this knows."""
    if received.startswith(b"HTTP/"):
        return "HTTP"
    if len(received) >= 9 and received[3] in (_HTTP2_SETTINGS, _HTTP2_GOAWAY) and received[5:9] == b"\0\0\0\0":
        return "gRPC (HTTP/2)"
    if len(received) >= 3 and received[0] in (_TLS_ALERT, _TLS_HANDSHAKE) and received[1] == 3:
        return "TLS"
    if received:
        return None
    timeout = min(timeout, 3.0)
    if _answers_tls(host, port, timeout):
        return "TLS"
    if _answers_pulsar(host, port, timeout):
        return "Pulsar"
    return None


def wrong_port_text(server: str, protocol: str) -> str:
    return (f"{server} speaks {protocol}, not RocketMQ remoting: use the remoting port (9876 by default; "
            f"serve prints it as `listening HOST:PORT remoting`)")


def _answers_tls(host: str, port: int, timeout: float) -> bool:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            with context.wrap_socket(raw, server_hostname=host):
                return True         # the handshake completed
    except (OSError, ValueError):       # ssl.SSLError is an OSError
        return False


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _pulsar_connect() -> bytes:
    """A Pulsar CONNECT frame: BaseCommand{type: CONNECT, connect: {client_version,
    protocol_version}}, written by hand (the CLI needs no protobuf for it)."""
    version = b"rocketmq-emulator-cli"
    connect = b"\x0a" + _varint(len(version)) + version + b"\x20" + _varint(19)
    command = b"\x08" + _varint(_PULSAR_CONNECT) + b"\x12" + _varint(len(connect)) + connect
    return struct.pack(">II", len(command) + 4, len(command)) + command


def _answers_pulsar(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(_pulsar_connect())
            reply = b""
            while len(reply) < 10:
                chunk = sock.recv(64)
                if not chunk:
                    break
                reply += chunk
    except OSError:
        return False
    # [totalSize][commandSize][BaseCommand: field 1 (type) first, as protobuf writes it]
    return len(reply) >= 10 and reply[8] == 0x08 and reply[9] == _PULSAR_CONNECTED


def remoting_server_on(host: str, port: int, timeout: float) -> tuple[str, str | None] | None:
    """What RocketMQ server answers a remoting request on ``host:port``: ("a
    rocketmq-emulator broker", its clock: real or virtual) when it answers the emulator's
    clock request, ("a RocketMQ broker or name server", None) when it answers with any
    remoting frame (a real one refuses the code), None when nothing answers in RocketMQ's
    words."""
    from ..fronts.remoting.protocol import EMULATOR_CLOCK_ADVANCE, ProtocolError, RemotingCommand
    from ..fronts.remoting.protocol.codec import FrameDecoder, encode

    request = RemotingCommand.request(EMULATOR_CLOCK_ADVANCE, {"millis": 0})     # `clock now`: changes nothing
    decoder = FrameDecoder()
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(encode(request))
            while True:
                data = sock.recv(65536)
                if not data:
                    return None
                for reply in decoder.feed(data):
                    if reply.opaque != request.opaque:
                        continue
                    clock = reply.header("clock") if reply.code == 0 else None
                    if clock:
                        return "a rocketmq-emulator broker", clock
                    return "a RocketMQ broker or name server", None
    except (OSError, ProtocolError):
        return None
