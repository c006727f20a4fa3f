"""The real npm client rocketmq-client-nodejs 1.0.8 (a RocketMQ 5.x gRPC client, installed
by ./dev from tests/interop/package.json) against `rocketmq-emulator serve --clock
virtual`'s gRPC front: what retry timing a Node 5.x PushConsumer gets.

A real 5.x proxy tells every consumer its group's retry policy as a customized backoff
(GrpcClientSettingsManager#mergeSubscriptionData), and so does this front. Node 1.0.8
reads only an exponential backoff (PushSubscriptionSettings#sync: "CustomizedBackoff
RetryPolicy not yet implemented"), so it has no retry policy and nacks a failed delivery
with ChangeInvisibleDuration(0): the message is delivered again at once, without the
server's clock moving, until its retryMaxTimes + 1 (17) deliveries are spent and the
broker moves it to %DLQ%<group>. In a FIFO group it has no max attempts either (its default
is 1), so its first failure forwards the message to the DLQ. Waits are bounded waits for
the node process."""
from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.processes import EmulatorProcess, wait_for

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent


class Node5Driver:
    """node5_driver.js (or another ``script`` of this folder) in a node process; its
    JSON-line events collected by a thread."""

    def __init__(self, config: dict, script: str = "node5_driver.js"):
        node = shutil.which("node")
        if node is None or not (HERE / "node_modules" / "rocketmq-client-nodejs").is_dir():
            pytest.fail("node or rocketmq-client-nodejs is missing: run ./dev test, which installs them")
        self.proc = subprocess.Popen([node, script, json.dumps(config)], cwd=HERE,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.events: list[dict] = []
        self._arrivals: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self._arrivals.put(json.loads(line))
        self._arrivals.put(None)

    def wait_for(self, predicate, timeout: float = 60.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while not predicate(self.events):
            try:
                event = self._arrivals.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"node driver: condition not met within {timeout} s; events: "
                                     f"{self.events[-20:]}") from None
            if event is None:
                raise AssertionError(f"node driver ended early; events: {self.events[-20:]}")
            self.events.append(event)
        return self.events

    def deliveries(self) -> list[int]:
        return [e["attempt"] for e in self.events if e["event"] == "delivery"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def cli(server, *args) -> str:
    done = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", *args, "--server", server.address],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def server_now(server) -> int:
    return json.loads(cli(server, "clock", "now", "--json"))["now_ms"]


@pytest.fixture
def server(tmp_path):
    proc = EmulatorProcess(tmp_path / "store", "--clock", "virtual", grpc=True).start()
    yield proc
    proc.stop()


def test_a_node_push_consumer_gets_every_retry_at_once_then_the_dlq(server):
    cli(server, "topic", "create", "NodeRetries")
    before = server_now(server)
    driver = Node5Driver({"endpoints": f"127.0.0.1:{server.grpc_port}", "topic": "NodeRetries",
                          "group": "node-group", "body": "always fails"})
    try:
        driver.wait_for(lambda events: len([e for e in events if e["event"] == "delivery"]) >= 17, timeout=120)
        assert driver.deliveries() == list(range(1, 18))          # 17 deliveries, the clock never moved
        assert server_now(server) == before
        [dead] = json.loads(cli(server, "dlq", "list", "node-group", "--json"))
        assert dead["original_topic"] == "NodeRetries"
        problems = [e for e in driver.events if e["event"] in ("log", "error") and e.get("level") == "error"]
        assert not problems, problems
    finally:
        driver.stop()
    assert len(driver.deliveries()) == 17                          # nothing after the DLQ


def test_a_node_push_consumer_in_a_fifo_group_dead_letters_at_the_first_failure(server):
    cli(server, "group", "create", "node-fifo", "--orderly")
    cli(server, "topic", "create", "NodeFifo", "--queues", "1")
    driver = Node5Driver({"endpoints": f"127.0.0.1:{server.grpc_port}", "topic": "NodeFifo", "group": "node-fifo",
                          "body": "fails once", "messageGroup": "order-17"})
    try:
        driver.wait_for(lambda events: any(e["event"] == "delivery" for e in events), timeout=60)
        [dead] = wait_for(lambda: json.loads(cli(server, "dlq", "list", "node-fifo", "--json")), timeout=30)
        assert dead["original_topic"] == "NodeFifo"
        assert driver.deliveries() == [1]
    finally:
        driver.stop()
