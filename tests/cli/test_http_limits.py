"""What a client can make serve's HTTP front hold (issue 34, item 3): idle sockets, a
request head or body that never ends, aborted uploads, more connections than allowed.
`serve` subprocesses with short limits; the server's RSS read from /proc; every wait
bounded."""
from __future__ import annotations

import socket
import time

from tests.support.logs import told
from tests.support.memory import status_mib
from tests.support.processes import EmulatorProcess, wait_for
from tests.support.sockets import closed_soon

MiB = 1024 * 1024


def get_ok(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        return s.recv(100).startswith(b"HTTP/1.1 200")


def post_head(port: int, length: int) -> bytes:
    return (f"POST /api/dlq/redrive HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def serve(tmp_path, *args):
    return EmulatorProcess(tmp_path / "store", "--clock", "virtual", *args, http=True).start()


def test_idle_sockets_cannot_fill_the_front_and_are_closed(tmp_path):
    server = serve(tmp_path, "--max-connections", "20", "--handshake-timeout", "1")
    try:
        before = status_mib(server.proc.pid)
        idle = [socket.create_connection(("127.0.0.1", server.http_port), timeout=10) for _ in range(300)]
        assert get_ok(server.http_port)                       # a client arriving meanwhile is served
        assert all(closed_soon(s, 10) for s in idle)          # made room for others, or silent for 1 s
        print(f"300 idle HTTP connections: server RSS {before:.0f} MiB -> +{status_mib(server.proc.pid) - before:.0f}")
        for s in idle:
            s.close()
        assert get_ok(server.http_port)
    finally:
        server.stop()
    err = server.proc.stderr.read()
    assert told(err, "to admit") + told(err, "no whole request head within 1 s") == 300
    assert len(err.splitlines()) < 60 and "Traceback" not in err


def test_a_request_head_that_never_ends_is_closed_after_the_handshake_timeout(tmp_path):
    server = serve(tmp_path, "--handshake-timeout", "1")
    try:
        slow = socket.create_connection(("127.0.0.1", server.http_port), timeout=10)
        slow.sendall(f"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1:{server.http_port}\r\nX-A: ".encode())
        for _ in range(3):                                    # a byte now and then (slowloris)
            time.sleep(0.2)
            slow.sendall(b"a")
        assert closed_soon(slow, 10)
        assert get_ok(server.http_port)
    finally:
        server.stop()
    assert told(server.proc.stderr.read(), "no whole request head within 1 s of accept (handshake timeout)") == 1


def test_stalled_bodies_are_closed_after_the_frame_timeout_and_their_memory_freed(tmp_path):
    server = serve(tmp_path, "--frame-timeout", "2")
    try:
        assert get_ok(server.http_port)
        before = status_mib(server.proc.pid)
        stalled = []
        for _ in range(20):                                   # 20 uploads of 1 MiB, each stuck half way
            s = socket.create_connection(("127.0.0.1", server.http_port), timeout=10)
            s.sendall(post_head(server.http_port, MiB) + b"x" * (MiB // 2))
            stalled.append(s)
        assert get_ok(server.http_port)
        assert all(closed_soon(s, 15) for s in stalled)
        after = status_mib(server.proc.pid) - before
        print(f"20 stalled 1 MiB uploads: server RSS {before:.0f} MiB, +{after:.0f} MiB after they were closed")
        assert after < 30
        assert get_ok(server.http_port)
    finally:
        server.stop()
    err = server.proc.stderr.read()
    assert told(err, "a request still unfinished") == 20 and "frame timeout 2 s" in err
    assert "Traceback" not in err


def test_aborted_uploads_are_a_line_each_without_a_traceback(tmp_path):
    server = serve(tmp_path)
    try:
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", server.http_port), timeout=10)
            s.sendall(post_head(server.http_port, 1000) + b'{"group": "bil')
            s.close()
        wait_for(lambda: get_ok(server.http_port))
    finally:
        server.stop()
    err = server.proc.stderr.read()
    assert "Traceback" not in err and " ERROR " not in err
    assert told(err, "the connection was lost before the request's body ended") == 300
    assert len(err.encode()) < 20_000, f"{len(err.encode())} bytes of log for 300 aborted uploads"


def test_malformed_requests_are_a_line_each_without_a_traceback(tmp_path):
    server = serve(tmp_path)
    try:
        for bad in (b"GET / HTTP/1.1\r\nHost: x\n bad\r\n\r\n", b"GET /\x00 HTTP/1.1\r\n\r\n",
                    b"GET / HTTP/1.1\r\n" + b"X-Long: " + b"a" * 20000 + b"\r\n\r\n", b"\x16\x03\x01\x02\x00\x01"):
            with socket.create_connection(("127.0.0.1", server.http_port), timeout=10) as s:
                s.sendall(bad)
                assert closed_soon(s, 10)
        assert get_ok(server.http_port)
    finally:
        server.stop()
    err = server.proc.stderr.read()
    assert "Traceback" not in err and " ERROR " not in err
    assert told(err, "a malformed request") >= 3
