"""A second `serve` on the ports of one that runs (issue 47: `./dev serve` twice said
`cannot listen on 127.0.0.1:8081 (gRPC)`): the remoting port is looked at first, the
broker answering there is named, and the line says how to start a second one. Exit 2,
one line, nothing created."""
from __future__ import annotations

import socket

from ..support.cli_run import one_error_line, run_cli
from ..support.processes import EmulatorProcess


def second_serve(first: EmulatorProcess, data_dir) -> str:
    done = run_cli("serve", "--port", str(first.port), "--grpc-port", str(first.grpc_port), "--no-pulsar",
                   "--no-http", "--data-dir", str(data_dir), timeout=30)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    return one_error_line(done.stderr, "serve")


def test_a_second_serve_names_the_running_broker_and_how_to_start_another(tmp_path):
    first = EmulatorProcess(tmp_path / "first", grpc=True).start()
    try:
        line = second_serve(first, tmp_path / "first")          # ./dev serve twice: the same store too
        assert f"a rocketmq-emulator broker is already running on 127.0.0.1:{first.port}" in line, line
        assert "gRPC" not in line and "8081" not in line, line
        assert "--port 0" in line and "--grpc-port" in line and "--http-port" in line, line
        assert "--data-dir" in line and "--in-memory" in line, line     # its store is in use as well
        elsewhere = tmp_path / "second"
        line = second_serve(first, elsewhere)                   # another store: only the ports are said
        assert "already running" in line and "--port 0" in line and "--data-dir" not in line, line
        assert not elsewhere.exists()
        done = run_cli("serve", "--port", "0", "--data-dir", str(tmp_path / "first"), "--no-grpc", "--no-pulsar",
                       "--no-http", timeout=30)                   # free ports, the running one's store
        line = one_error_line(done.stderr, "serve")
        assert done.returncode == 2 and "is locked by another live store" in line, line
        assert line.endswith("to run a second broker beside it: --data-dir DIR or --in-memory"), line
    finally:
        first.stop()


def test_a_port_held_by_something_else_is_still_said_as_the_system_says_it(tmp_path):
    with socket.socket() as busy:                   # listens, answers nothing
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_cli("serve", "--port", str(port), "--data-dir", str(tmp_path / "s"), "--no-grpc", "--no-pulsar",
                       "--no-http", timeout=30)
    line = one_error_line(done.stderr, "serve")
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port} (remoting)" in line, line
    assert "already running" not in line and not (tmp_path / "s").exists()
