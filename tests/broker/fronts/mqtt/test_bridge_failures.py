"""The bridge stops `serve` when it cannot run — a bug or a broken install is not a lost
connection to retry forever — and keeps retrying when the MQTT broker is only away."""
from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC

from tests.support.cli_run import CLI_MAIN
from tests.support.processes import free_port, read_listening, wait_for
from tests.support.remoting import RawClient

BROKEN_CLIENT = """
import aiomqtt
class Client:
    def __init__(self, *args, **kwargs):
        raise TypeError("Client() got an unexpected keyword argument 'identifier'")
aiomqtt.Client = Client
"""


def serve(tmp_path, prelude=""):
    return subprocess.Popen([sys.executable, "-c", prelude + CLI_MAIN, "serve", "--port", "0",
                             "--data-dir", str(tmp_path / "store"), "--mqtt", f"mqtt://127.0.0.1:{free_port()}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_bridge_that_cannot_run_stops_the_server_with_one_line(tmp_path):
    proc = serve(tmp_path, BROKEN_CLIENT)
    try:
        code = proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"serve kept running without its bridge: {proc.communicate()[1][-2000:]}")
    err = proc.stderr.read()
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last == ("rocketmq-emulator serve: error: the MQTT bridge failed: "
                    "TypeError: Client() got an unexpected keyword argument 'identifier'"), err
    assert "Traceback" in err


def test_an_mqtt_broker_that_is_away_is_retried_and_the_server_keeps_serving(tmp_path):
    proc = serve(tmp_path)              # nothing listens on the --mqtt port
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    try:
        port = read_listening(proc)["remoting"][1]
        reader.start()
        wait_for(lambda: sum("MQTT bridge disconnected" in line and "retrying" in line for line in lines) >= 2)
        assert proc.poll() is None
        c = RawClient(port)
        assert c.call(RemotingCommand.request(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})).code == RC.TOPIC_NOT_EXIST
        c.close()
    finally:
        proc.terminate()
        proc.wait(15)
    assert proc.returncode == 0
