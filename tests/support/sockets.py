"""Raw sockets in tests and benchmarks: bounded waits for what the server does."""
from __future__ import annotations

import socket


def closed_soon(sock: socket.socket, timeout: float) -> bool:
    """True once the server closes ``sock`` (EOF or reset) within ``timeout`` seconds,
    whatever it sent before (a greeting, a reply)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(1 << 16):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
