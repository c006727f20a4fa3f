"""`serve`'s 5.x gRPC listener: announced like the others, turned off with --no-grpc,
and a port it cannot have is one line, exit 2, nothing left on disk."""
from __future__ import annotations

import socket
import subprocess
import sys

import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from ..support.cli_run import one_error_line, run_cli  # noqa: E402
from ..support.processes import read_listening  # noqa: E402


def serve(*args):
    return subprocess.Popen([sys.executable, "-m", "rocketmq_emulator.broker.cli", "serve", "--log-level", "WARNING",
                             "--in-memory", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_port_0_also_gives_the_grpc_listener_a_free_port_and_announces_it():
    proc = serve("--port", "0")
    try:
        found = read_listening(proc, kinds=("remoting", "grpc"))
        port = found["grpc"][1]
        assert port not in (0, 8081, found["remoting"][1])
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err


def test_no_grpc_leaves_only_the_remoting_listener():
    proc = serve("--port", "0", "--no-grpc")
    try:
        read_listening(proc)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=15)
    assert b"grpc" not in out and proc.returncode == 0


def test_no_grpc_with_a_grpc_port_is_a_usage_error():
    done = run_cli("serve", "--in-memory", "--no-grpc", "--grpc-port", "9000", timeout=20)
    assert done.returncode == 2
    assert "--no-grpc" in one_error_line(done.stderr, "serve")


def test_a_busy_grpc_port_is_one_line_exit_2_and_the_new_store_is_taken_back(tmp_path):
    data_dir = tmp_path / "store"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_cli("serve", "--port", "0", "--grpc-port", str(port), "--data-dir", str(data_dir), timeout=20)
    assert done.returncode == 2, done.stderr
    assert f"cannot listen on 127.0.0.1:{port} (gRPC)" in one_error_line(done.stderr, "serve")
    assert not data_dir.exists()
