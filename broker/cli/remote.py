"""One connection to a running server for the CLI's commands: ``--server`` and
``--timeout``, requests sent and their replies read, a port of another protocol named."""
from __future__ import annotations

import argparse
import socket

from .common import fail, positive_float

__all__ = ["add_server_options", "call_server", "call_server_many", "server_address"]


def server_address(text: str) -> str:
    """An argparse type: HOST:PORT with a port from 1 to 65535."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT with a port from 1 to 65535, got {text!r}")
    return text


def add_server_options(p: argparse.ArgumentParser, timeout: float) -> None:
    """--server HOST:PORT and --timeout SECONDS (``timeout`` the default)."""
    p.add_argument("--server", type=server_address, default="127.0.0.1:9876",
                   help="HOST:PORT of `rocketmq-emulator serve`")
    p.add_argument("--timeout", type=positive_float, default=timeout, metavar="SECONDS",
                   help="seconds to wait for the reply")


def call_server(command: str, server: str, req, timeout: float, refused_exit: int = 1, accept=()):
    """Send one request to ``server`` (HOST:PORT, already checked) and return its
    successful reply (or one whose code is in ``accept``), or the exit code after
    printing one error line (``refused_exit`` when the server refused the request)."""
    replies = call_server_many(command, server, [req], timeout, refused_exit, accept)
    return replies if isinstance(replies, int) else replies[0]


def call_server_many(command: str, server: str, reqs: list, timeout: float, refused_exit: int = 1, accept=()):
    """``call_server`` for several requests on one connection: their replies in the
    order of ``reqs``, or the exit code after one error line. A port that speaks
    another protocol (HTTP, gRPC, Pulsar, TLS) is named, exit 2 (cli_probe)."""
    from ..fronts.remoting.protocol import ProtocolError
    from ..fronts.remoting.protocol.codec import FrameDecoder, encode

    host, _, port = server.rpartition(":")
    host = host.strip("[]")
    waiting = {req.opaque: i for i, req in enumerate(reqs)}
    replies = [None] * len(reqs)
    received = b""                      # the first bytes back, to tell another protocol
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout)
    except OSError as exc:
        return fail(command, f"cannot reach {server}: {exc}", 1)
    try:
        with sock:
            sock.sendall(b"".join(encode(req) for req in reqs))
            decoder = FrameDecoder()
            while waiting:
                data = sock.recv(65536)
                if not data:
                    return _unanswered(command, server, host, int(port), received, timeout,
                                       f"{server} closed the connection")
                if len(received) < 64:
                    received += data[:64 - len(received)]
                for cmd in decoder.feed(data):
                    i = waiting.pop(cmd.opaque, None)
                    if i is None:
                        continue
                    if cmd.code != 0 and cmd.code not in accept:
                        return fail(command, cmd.remark or f"refused with code {cmd.code}", refused_exit)
                    replies[i] = cmd
    except (ConnectionResetError, ProtocolError) as exc:
        return _unanswered(command, server, host, int(port), received, timeout, f"cannot reach {server}: {exc}")
    except OSError as exc:
        return fail(command, f"cannot reach {server}: {exc}", 1)
    return replies


def _unanswered(command: str, server: str, host: str, port: int, received: bytes, timeout: float, why: str) -> int:
    """A server that answered no remoting frame: name its protocol when it is one we
    know (the user's mistake, exit 2), else say ``why`` (exit 1)."""
    from .probe import foreign_protocol, wrong_port_text

    protocol = foreign_protocol(host, port, received, timeout)
    if protocol is not None:
        return fail(command, wrong_port_text(server, protocol), 2)
    return fail(command, why, 1)
