"""A failure in what `serve` cannot run without — here the flush that the real clock's
timer (or a virtual-clock server's real-time flush) runs — is logged and stops the
server with exit 1 and one line, instead of the server going on without it."""
from __future__ import annotations

import subprocess
import sys

import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import ResponseCode as RC

from tests.broker.fronts.remoting.listener.test_wire_facts import send_req
from ..support.cli_run import CLI_MAIN
from ..support.processes import read_listening
from ..support.remoting import RawClient

BROKEN_FLUSH = """
from rocketmq_emulator.broker.core import BrokerCore
def flush(self):
    raise OSError(28, "No space left on device")
BrokerCore.flush = flush
"""


@pytest.mark.parametrize("clock", ["real", "virtual"])
def test_a_failing_flush_stops_the_server_with_one_line(tmp_path, clock):
    proc = subprocess.Popen([sys.executable, "-c", BROKEN_FLUSH + CLI_MAIN, "serve", "--port", "0", "--clock", clock,
                             "--data-dir", str(tmp_path / "store"), "--log-level", "WARNING"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = read_listening(proc)["remoting"][1]
        c = RawClient(port)
        assert c.call(send_req("T", b"makes a flush due")).code == RC.SUCCESS
        c.close()
        code = proc.wait(20)        # the flush is due within flushIntervalCommitLog (500 ms)
    except subprocess.TimeoutExpired:
        pytest.fail("the server went on serving after its flush failed")
    finally:
        if proc.poll() is None:
            proc.kill()
        err = proc.stderr.read()
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("rocketmq-emulator serve: error: ") and "No space left on device" in last, err
    assert "Traceback" in err                              # the log keeps the traceback
