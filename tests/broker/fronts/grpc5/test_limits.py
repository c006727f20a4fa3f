"""The 5.x gRPC front's connection limits (issue 46, item 5): sockets that never send a
byte cannot lock real clients out. At ``max_connections`` the oldest connection that has
not sent a request is closed to admit the new one, as the remoting and Pulsar fronts do
(connection_guard.py); one that sends nothing is closed after the handshake timeout; a
flood over connections that all made calls is refused. Against `serve`, with a real gRPC
client; every wait is bounded."""
from __future__ import annotations

import socket

import pytest

grpc = pytest.importorskip("grpc", reason="needs the grpc extra: ./dev test installs it")
from rocketmq.grpc_protocol import definition_pb2 as pb, service_pb2 as spb, service_pb2_grpc  # noqa: E402

from tests.support.logs import told  # noqa: E402
from tests.support.processes import EmulatorProcess  # noqa: E402


@pytest.fixture
def serve(tmp_path):
    procs = []

    def start(*args: str) -> EmulatorProcess:
        p = EmulatorProcess(tmp_path / f"store{len(procs)}", *args, grpc=True).start()
        procs.append(p)
        return p
    yield start
    for p in procs:
        p.stop()


def route(port: int, timeout: float = 5) -> int:
    """A QueryRoute on a fresh channel (a client arriving now): its status code. Raises
    grpc.RpcError when the call fails (refused, or no answer within ``timeout``)."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = service_pb2_grpc.MessagingServiceStub(channel).QueryRoute(
            spb.QueryRouteRequest(topic=pb.Resource(name="TBW102")), metadata=(("x-mq-client-id", "good"),),
            timeout=timeout)
    return reply.status.code


def closed(s: socket.socket, timeout: float) -> bool:
    """True once the server closes ``s`` (EOF or reset) within ``timeout`` seconds."""
    s.settimeout(timeout)
    try:
        while s.recv(65536):
            pass                                # (an HTTP/2 server speaks first: its SETTINGS)
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_silent_sockets_at_the_maximum_make_room_for_a_real_client(serve):
    """30 sockets that never send a byte against 10 allowed, and a handshake timeout far
    longer than the test: a client arriving then is served at once (at 05e806b gRPC's own
    limit refused it until a silent one timed out), the oldest silent ones were closed to
    make room, each with a line in the log."""
    server = serve("--max-connections", "10", "--handshake-timeout", "60")
    assert route(server.grpc_port) == pb.OK
    silent = [socket.create_connection(("127.0.0.1", server.grpc_port), timeout=10) for _ in range(30)]
    try:
        assert route(server.grpc_port) == pb.OK
        assert route(server.grpc_port) == pb.OK
        assert all(closed(s, 10) for s in silent[:20])             # each made room for the next
    finally:
        for s in silent:
            s.close()
    server.stop()
    err = server.proc.stderr.read()
    assert "Traceback" not in err
    assert told(err, "to admit") >= 20


def test_a_socket_that_sends_nothing_is_closed_after_the_handshake_timeout(serve):
    server = serve("--handshake-timeout", "1")
    s = socket.create_connection(("127.0.0.1", server.grpc_port), timeout=10)
    try:
        assert closed(s, 10)
    finally:
        s.close()
    assert route(server.grpc_port) == pb.OK


def test_without_a_connection_limit_grpc_listens_itself_and_serves(serve):
    """--max-connections 0: no door (its relay costs CPU and it is there for the limit);
    the front serves as before, 40 silent sockets or not."""
    server = serve("--max-connections", "0")
    silent = [socket.create_connection(("127.0.0.1", server.grpc_port), timeout=10) for _ in range(40)]
    try:
        assert route(server.grpc_port) == pb.OK
    finally:
        for s in silent:
            s.close()
