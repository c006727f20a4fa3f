"""The CLI pointed at a port that speaks another protocol says which one it found and
which port to use, in one line with exit code 2 - not "frame length 1213486160 exceeds
the maximum frame size": serve's HTTP, gRPC and Pulsar ports, and a TLS listener."""
from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading

import pytest

from tests.support.cli_run import one_error_line, run_cli
from tests.support.processes import EmulatorProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = EmulatorProcess(tmp_path_factory.mktemp("ports") / "store", "--clock", "virtual", grpc=True, pulsar=True,
                        http=True).start()
    yield s
    s.stop()


@pytest.mark.parametrize("front, protocol", [("http", "HTTP"), ("grpc", "gRPC (HTTP/2)"), ("pulsar", "Pulsar")])
@pytest.mark.parametrize("argv", [["status"], ["topic", "list"], ["clock", "now"]], ids=lambda a: "-".join(a))
def test_a_front_of_another_protocol_is_named(server, front, protocol, argv):
    port = {"http": server.http_port, "grpc": server.grpc_port, "pulsar": server.pulsar_port}[front]
    done = run_cli(*argv, "--server", f"127.0.0.1:{port}")
    assert done.returncode == 2, done.stderr
    line = one_error_line(done.stderr, " ".join(argv))
    assert f"127.0.0.1:{port} speaks {protocol}, not RocketMQ remoting: use the remoting port (9876 by default" \
        in line, line


@pytest.fixture
def tls_listener(tmp_path):
    """A TLS server (a self-signed certificate made with Debian's openssl, which ./dev
    installs) that handshakes with whoever connects."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("openssl is not installed: run ./dev test, which installs it")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost"], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(5)
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except OSError:
                pass        # a client that is not TLS (our remoting request) or that left: next one
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(5)
    listener.close()


def test_a_tls_listener_is_named(tls_listener):
    done = run_cli("status", "--server", f"127.0.0.1:{tls_listener}")
    assert done.returncode == 2, done.stderr
    assert f"127.0.0.1:{tls_listener} speaks TLS, not RocketMQ remoting" in one_error_line(done.stderr, "status")


def test_the_remoting_port_still_answers(server):
    done = run_cli("clock", "now", "--server", server.address)
    assert done.returncode == 0 and done.stdout.startswith("clock now "), done.stderr
