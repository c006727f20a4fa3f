"""What `serve` tells a script and a person: the machine-readable `listening` line,
--in-memory, --version and help that shows defaults and choices."""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC

from tests.broker.fronts.remoting.listener.test_wire_facts import send_req
from ..support.processes import read_listening
from ..support.remoting import RawClient


def serve(*args, **popen):
    return subprocess.Popen([sys.executable, "-m", "rocketmq_emulator.broker.cli", "serve", "--log-level", "WARNING",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def stop(proc):
    proc.terminate()
    out, err = proc.communicate(timeout=15)
    return proc.returncode, out.decode(), err.decode()


def test_port_0_prints_the_chosen_port_in_one_machine_readable_line(tmp_path):
    proc = serve("--port", "0", "--data-dir", str(tmp_path / "store"))
    try:
        listeners = read_listening(proc)
        assert set(listeners) == {"remoting"}
        host, port = listeners["remoting"]
        assert host == "127.0.0.1" and port > 0
        c = RawClient(port)                            # the line came once the port was serving
        assert c.call(RemotingCommand.request(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": "None"})).code \
            == RC.TOPIC_NOT_EXIST
        c.close()
        assert any(f"listening on 127.0.0.1:{port}" in line for line in proc.lines_before)   # the human line
    finally:
        code, out, err = stop(proc)
    assert code == 0 and "stopped" in out


def test_in_memory_serves_and_writes_nothing_anywhere(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    proc = serve("--port", "0", "--in-memory", env={**os.environ, "HOME": str(home)}, cwd=home)
    try:
        port = read_listening(proc)["remoting"][1]
        assert any("store in memory" in line for line in proc.lines_before)
        c = RawClient(port)
        assert c.call(send_req("T", b"kept in memory only")).code == RC.SUCCESS
        c.close()
    finally:
        code, out, err = stop(proc)
    assert code == 0, err
    assert list(home.iterdir()) == []


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"rocketmq-emulator {importlib.metadata.version('rocketmq-emulator')}"


def help_of(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv) + ["--help"])
    assert exc.value.code == 0
    return " ".join(capsys.readouterr().out.split())       # argparse wraps lines


def test_serve_help_shows_defaults_choices_and_where_the_store_lives(capsys):
    text = help_of(capsys, "serve")
    for shown in ("--port PORT", "(default: 9876)", "--clock {real,virtual}", "(default: real)",
                  "--log-level {DEBUG,INFO,WARNING,ERROR,CRITICAL}", "(default: INFO)",
                  "(default: 16777216)", "65536 to 1073741824", "~/.rocketmq-emulator/store", "--in-memory",
                  "(default: rocketmq-emulator)", "(default: rocketmq)", "--mqtt-username", "--mqtt-password"):
        assert shown in text, shown
    assert "usage: rocketmq-emulator serve" in text


@pytest.mark.parametrize("argv", [("clock", "advance"), ("clock", "now"), ("topic", "create")])
def test_admin_help_shows_server_and_timeout_defaults(capsys, argv):
    text = help_of(capsys, *argv)
    assert f"usage: rocketmq-emulator {' '.join(argv)}" in text
    assert "(default: 127.0.0.1:9876)" in text and "--timeout" in text and "(default: " in text


def test_simulate_help_shows_defaults(capsys):
    text = help_of(capsys, "simulate")
    assert "usage: rocketmq-emulator simulate" in text and "(default: 0)" in text


@pytest.mark.parametrize("argv, command", [
    (["clock", "advance", "soon"], "clock advance"),
    (["clock"], "clock"),
    (["clock", "advance", "1s", "--timeout", "-3"], "clock advance"),
    (["clock", "now", "--server", "127.0.0.1:99999"], "clock now"),
    (["topic", "create", "T", "--queues", "zero"], "topic create"),
    (["simulate", "--out", "x", "--messages", "many"], "simulate"),
    (["serve", "--clock", "sundial"], "serve"),
])
def test_every_command_refuses_in_one_line_with_its_own_prefix(capsys, argv, command):
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rocketmq-emulator {command}: error: "), captured.err
    assert captured.out == ""
