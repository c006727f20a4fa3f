"""`rocketmq-emulator serve`: bad input and missing extras stop it at once with one line
and exit 2, before anything is created on disk; a failed start leaves no directory."""
from __future__ import annotations

import socket

import pytest

from rocketmq_emulator.broker.cli.common import install_command

from ..support.cli_run import one_error_line, run_cli


@pytest.mark.parametrize("args, says", [
    (["--port", "99999"], "argument --port: must be from 0 to 65535, got 99999"),
    (["--port", "-1"], "argument --port: must be from 0 to 65535, got -1"),
    (["--port", "ninety"], "argument --port: expected a port number"),
    (["--log-level", "LOUD"], "argument --log-level: invalid choice: 'LOUD'"),
    (["--max-frame-size", "-1"], "argument --max-frame-size: must be from 65536 to 1073741824"),
    (["--max-frame-size", "100"], "argument --max-frame-size: must be from 65536 to 1073741824"),
    (["--message-delay-level", "1s soon"], "entry 2 'soon'"),
    (["--config", "/nonexistent/broker.conf"], "cannot read broker config"),
    (["--mqtt", "http://x"], "--mqtt must look like mqtt://HOST:PORT"),
    (["--in-memory", "--data-dir", "/tmp/x"], "--in-memory keeps nothing on disk"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["--handshake-timeout", "-1"], "argument --handshake-timeout: expected a number >= 0, got '-1'"),
    (["--handshake-timeout", "soon"], "argument --handshake-timeout: expected a number >= 0, got 'soon'"),
    (["--pulsar-max-pending-bytes", "-1"], "argument --pulsar-max-pending-bytes: expected a number >= 0, got '-1'"),
    (["--pulsar-max-pending-bytes", "1" * 5000], "argument --pulsar-max-pending-bytes: expected a number >= 0"),
    # issue 46.8: the bound of the field, the argument shortened
    (["--max-connections", "9" * 5000], "argument --max-connections: expected a number >= 0, got "
                                        "'9999999999999999999999999999999999999999...(5000 characters)'"),
    (["--max-outgoing-buffer", "9" * 20], "argument --max-outgoing-buffer: must be at most 9223372036854775807"),
    (["--idle-timeout", "1e400"], "argument --idle-timeout: must be at most 9223372036854775807"),
])
def test_bad_serve_input_is_one_line_exit_2_and_creates_nothing(tmp_path, args, says):
    data_dir = tmp_path / "store"
    if "--data-dir" not in args:
        args = [*args, "--data-dir", str(data_dir)]
    done = run_cli("serve", *args, timeout=20)
    assert done.returncode == 2, done.stderr
    assert says in one_error_line(done.stderr, "serve")
    assert not data_dir.exists()
    assert done.stdout == ""


def test_log_level_error_lists_the_choices_and_any_case_is_taken(tmp_path):
    line = one_error_line(run_cli("serve", "--log-level", "LOUD", "--data-dir", str(tmp_path / "s")).stderr, "serve")
    for level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        assert level in line
    # lower case is accepted (the old behaviour): it fails on the port below, not on the level
    done = run_cli("serve", "--log-level", "debug", "--port", "99999")
    assert "--log-level" not in done.stderr and "--port" in done.stderr


def test_a_missing_mqtt_extra_stops_serve_at_once_naming_the_extra(tmp_path):
    data_dir = tmp_path / "store"
    done = run_cli("serve", "--port", "0", "--data-dir", str(data_dir), "--mqtt", "mqtt://127.0.0.1:1883",
                   prelude="import sys; sys.modules['aiomqtt'] = None", timeout=20)
    assert done.returncode == 2, (done.stdout, done.stderr)
    line = one_error_line(done.stderr, "serve")
    assert "--mqtt needs the mqtt extra" in line and line.endswith(install_command("mqtt")), line
    assert not data_dir.exists()


def test_a_port_in_use_leaves_no_directory_behind(tmp_path):
    data_dir = tmp_path / "new" / "store"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_cli("serve", "--port", str(port), "--data-dir", str(data_dir), "--no-grpc", "--no-pulsar", "--no-http",
                       timeout=20)
    assert done.returncode == 2
    line = one_error_line(done.stderr, "serve")
    assert f"cannot listen on 127.0.0.1:{port} (remoting)" in line
    assert "--port N" in line and "--port 0" in line, line
    assert not (tmp_path / "new").exists()


def test_a_port_in_use_keeps_an_existing_store(tmp_path):
    from rocketmq_emulator.broker.core import BrokerCore
    from rocketmq_emulator.delay_scheduler import VirtualClock

    data_dir = tmp_path / "store"
    core = BrokerCore.open(data_dir, VirtualClock())
    core.create_topic("Kept")
    core.close()
    before = sorted(p.relative_to(data_dir) for p in data_dir.rglob("*"))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        done = run_cli("serve", "--port", str(busy.getsockname()[1]), "--data-dir", str(data_dir), "--no-grpc",
                       "--no-pulsar", "--no-http", timeout=20)
    assert done.returncode == 2
    assert sorted(p.relative_to(data_dir) for p in data_dir.rglob("*")) == before
    assert "Kept" in (data_dir / "config" / "topics.json").read_text()


def test_a_host_that_is_no_address_of_this_machine_is_one_line_naming_host(tmp_path):
    """192.0.2.1 (TEST-NET-1, never assigned): the first listener to bind it (the gRPC
    front's C++ core would log a line of its own first) is not reached; one line says
    the address is not this machine's, and names --host."""
    done = run_cli("serve", "--host", "192.0.2.1", "--port", "0", "--in-memory", timeout=30)
    assert done.returncode == 2, done.stderr
    line = one_error_line(done.stderr, "serve")
    assert "--host 192.0.2.1" in line and "not an address of this machine" in line, line
    assert "add_port" not in done.stderr
