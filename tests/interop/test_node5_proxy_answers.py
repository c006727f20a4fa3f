"""The real npm client rocketmq-client-nodejs 1.0.8 against `rocketmq-emulator serve
--clock virtual`'s gRPC front, tried the way its users test against a local proxy (issue
42): a typed topic's route and the client's own refusal of another message type, a send
receipt's transaction id, an unknown topic failing the producer's start-up, and
transactions — commit, rollback, and a check-back over the Telemetry stream that `clock
advance` brings. (The Python 5.x client: tests/broker/fronts/grpc5/test_proxy_answers.py.)
What reached the topic is read with the real Python 5.x client. Waits are bounded."""
from __future__ import annotations

import json

import pytest

from tests.interop.test_node5_client import Node5Driver, cli
from tests.support.processes import EmulatorProcess, wait_for

pytestmark = pytest.mark.interop


@pytest.fixture
def server(tmp_path):
    proc = EmulatorProcess(tmp_path / "store", "--clock", "virtual", grpc=True).start()
    yield proc
    proc.stop()


def drive(server, mode: str, **config) -> Node5Driver:
    return Node5Driver({"endpoints": f"127.0.0.1:{server.grpc_port}", "mode": mode, **config},
                       script="node5_proxy.js")


def events(driver, name):
    return [e for e in driver.events if e["event"] == name]


def read_topic(server, topic, group, want):
    """Bodies delivered from ``topic`` to a new group, with the real Python 5.x client."""
    rocketmq = pytest.importorskip("rocketmq", reason="needs the grpc extra: ./dev test installs it")
    cli(server, "group", "create", group)
    config = rocketmq.ClientConfiguration(f"127.0.0.1:{server.grpc_port}", rocketmq.Credentials(), request_timeout=3)
    consumer = rocketmq.SimpleConsumer(config, group, {topic: rocketmq.FilterExpression("*")}, await_duration=1)
    consumer.startup()
    got = []
    try:
        wait_for(lambda: got.extend(consumer.receive(16, 30)) or len(got) >= want, timeout=20, interval=0)
        extra = consumer.receive(16, 30)            # a 1 s long poll: nothing more comes
        return sorted(m.body for m in got + extra)
    finally:
        consumer.shutdown()


def test_a_fifo_topic_routes_fifo_only_the_client_refuses_a_normal_message_and_receipts_carry_the_id(server):
    out = cli(server, "topic", "create", "NodeFifo42", "--message-type", "fifo")
    assert "FIFO" in out
    cli(server, "topic", "create", "NodePlain42")
    driver = drive(server, "types", fifoTopic="NodeFifo42", plainTopic="NodePlain42")
    try:
        driver.wait_for(lambda evs: any(e["event"] in ("ready", "error") for e in evs), timeout=60)
        assert not events(driver, "error"), driver.events
        [refused] = events(driver, "refused")
        # the client's own check against the route's accept types (FIFO = 2 only)
        assert "Current message type not match" in refused["text"] and "acceptMessageTypes=[2]" in refused["text"]
        sent = {e["body"]: e for e in events(driver, "sent")}
        assert set(sent) == {"fifo", "normal"}
        for receipt in sent.values():           # the transaction id of every send: its message id
            assert receipt["transactionId"] == receipt["messageId"] != ""
    finally:
        driver.stop()
    assert "message type: FIFO" in cli(server, "topic", "show", "NodeFifo42")


def test_a_producer_of_an_unknown_topic_fails_its_start_up_and_no_topic_is_made(server):
    driver = drive(server, "unknown", topic="NodeNowhere42")
    try:
        driver.wait_for(lambda evs: any(e["event"] in ("ready", "error") for e in evs), timeout=60)
        [failed] = events(driver, "startup-failed")
        assert "Failed to fetch topic routes" in failed["text"]
        logged = " ".join(e["text"] for e in events(driver, "log"))
        assert "response-code=40402" in logged and "NodeNowhere42 not found" in logged
    finally:
        driver.stop()
    assert "NodeNowhere42" not in cli(server, "topic", "list")


def test_node_transactions_commit_roll_back_and_answer_a_check_back_after_clock_advance(server):
    cli(server, "topic", "create", "NodeTx42", "--message-type", "transaction", "--queues", "2")
    driver = drive(server, "transaction", topic="NodeTx42", answer="commit")
    try:
        driver.wait_for(lambda evs: any(e["event"] in ("ready", "error") for e in evs), timeout=60)
        assert not events(driver, "error"), driver.events
        sent = {e["body"]: e for e in events(driver, "sent")}
        assert set(sent) == {"commit me", "roll me back", "unended"}
        shown = cli(server, "topic", "show", "NodeTx42")
        assert "half messages waiting for their producer's commit or rollback: 1" in shown
        assert sent["unended"]["transactionId"] in shown
        assert events(driver, "checked") == []
        cli(server, "clock", "advance", "6s")              # transactionTimeOut: the first check-back
        driver.wait_for(lambda evs: any(e["event"] == "checked" for e in evs), timeout=30)
        [checked] = events(driver, "checked")
        assert (checked["body"], checked["topic"], checked["messageId"]) == \
            ("unended", "NodeTx42", sent["unended"]["messageId"])
        wait_for(lambda: sum(r["half_messages"] for r in json.loads(cli(server, "topic", "show", "NodeTx42",
                                                                          "--json"))) == 0, timeout=20)
        problems = [e for e in driver.events if e["event"] == "log" and e.get("level") == "error"]
        assert not problems, problems
    finally:
        driver.stop()
    assert read_topic(server, "NodeTx42", "node-tx-reader", 2) == [b"commit me", b"unended"]
