"""`rocketmq-emulator ... | head -1`: when the reader of stdout has gone, a command stops
quietly as Unix tools do (no BrokenPipeError traceback, no "Exception ignored" line),
with the exit status of a tool killed by SIGPIPE (141). The pipe's read end is closed
before the command writes, so its first write finds it gone (no race with `head`)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketmq_emulator.broker.cli.main import main
from tests.support.processes import EmulatorProcess

CLI = str(Path(sys.executable).with_name("rocketmq-emulator"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = EmulatorProcess(tmp_path_factory.mktemp("pipe") / "store", "--clock", "virtual").start()
    assert main(["topic", "create", "Orders", "--queues", "2", "--server", s.address]) == 0
    assert main(["message", "send", "Orders", "hello", "--server", s.address]) == 0
    assert main(["group", "create", "billing", "--server", s.address]) == 0
    yield s
    s.stop()


def run_into_closed_pipe(*args: str) -> subprocess.CompletedProcess:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([CLI, *args], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("argv", [["topic", "list"], ["topic", "show", "Orders"], ["status"], ["status", "--json"],
                                  ["group", "list"], ["dlq", "list", "billing"], ["clock", "now"],
                                  ["message", "find", "--topic", "Orders", "--key", "x"], ["topic", "--help"]],
                         ids=lambda a: "-".join(a))
def test_a_command_whose_reader_has_gone_exits_quietly(server, argv):
    done = run_into_closed_pipe(*argv, "--server", server.address) if argv[-1] != "--help" else \
        run_into_closed_pipe(*argv)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr
    # (argparse's help printer drops a write error itself and exits 0)
    assert done.returncode == (0 if argv[-1] == "--help" else 141), (done.returncode, done.stderr)
