"""The real npm client ali-ons 3.12.0 (a pure-JS RocketMQ 4.x remoting client, installed
by ./dev from tests/interop/package.json) against `rocketmq-emulator serve --clock
virtual`: it produces, consumes, fails two messages (by returning ACTION_RETRY and by
throwing), sees their retries through %RETRY%<group> as the test moves the server's
clock with `rocketmq-emulator clock advance`, and the broker dead-letters them on the
client's last CONSUMER_SEND_MSG_BACK. Facts: real-clients.md §3; checklist 37, 50-68.

Waits here are bounded waits for another process (the node client runs on real timers);
the retry delays themselves never pass in real time.
"""
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

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC
from tests.support.delay import DEFAULT_MESSAGE_DELAY_LEVEL, levels_of
from rocketmq_emulator.store.records import Prop, iter_records
from tests.support.processes import EmulatorProcess
from tests.support.remoting import RawClient

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent
TOPIC, GROUP = "OnsTopic", "CG_ONS"
MAX_RECONSUME = 16          # ali-ons' default maxReconsumeTimes: 17 failed attempts, then the DLQ
LEVELS = levels_of(DEFAULT_MESSAGE_DELAY_LEVEL)


class OnsDriver:
    """ons_driver.js in a node process; its JSON-line events collected by a thread."""

    def __init__(self, namesrv: str, ok_count: int, poison_count: int, max_reconsume: int = MAX_RECONSUME,
                 sql: str | None = None):
        node = shutil.which("node")
        if node is None or not (HERE / "node_modules" / "ali-ons").is_dir():
            pytest.fail("node or ali-ons is missing: run ./dev test, which installs them")
        config = {"nameSrv": namesrv, "topic": TOPIC, "group": GROUP, "okCount": ok_count,
                  "poisonCount": poison_count, "maxReconsumeTimes": max_reconsume, "sql": sql}
        self.proc = subprocess.Popen([node, "ons_driver.js", json.dumps(config)], cwd=HERE,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.events: list[dict] = []
        self._arrivals: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self._arrivals.put(json.loads(line))
        self._arrivals.put(None)

    def wait_for(self, predicate, timeout: float = 30.0) -> list[dict]:
        """Collect events until ``predicate(events)`` holds (bounded)."""
        deadline = time.monotonic() + timeout
        while not predicate(self.events):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"ali-ons did not get there in {timeout} s; events: {self.events}")
            try:
                event = self._arrivals.get(timeout=remaining)
            except queue.Empty:
                continue
            if event is None:
                raise AssertionError(f"the node driver exited early; events: {self.events}")
            if event["event"] == "fatal":
                raise AssertionError(f"the node driver failed: {event['text']}")
            self.events.append(event)
        return self.events

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["event"] == kind]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()             # the driver closes consumer and producer
            try:
                self.wait_for(lambda ev: any(e["event"] == "closed" for e in ev), timeout=20)
            finally:
                self.proc.wait(10)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def emulator(tmp_path):
    server = EmulatorProcess(tmp_path / "data", "--clock", "virtual").start()
    yield server
    server.stop()


def admin_call(port: int, code: int, ext: dict) -> RemotingCommand:
    client = RawClient(port)
    try:
        return client.call(RemotingCommand.request(code, ext))
    finally:
        client.close()


def clock_advance(server: EmulatorProcess, duration: str) -> None:
    """The user's way: `rocketmq-emulator clock advance DURATION --server HOST:PORT`."""
    done = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "clock", "advance", duration,
                           "--server", server.address], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def max_offset(port: int, topic: str, queue_id: int = 0) -> int:
    reply = admin_call(port, RQ.GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id})
    assert reply.code == RC.SUCCESS, reply.remark
    return int(reply.header("offset"))


def wait_sent_back(port: int, level: int, count: int, driver: OnsDriver) -> None:
    """Bounded wait until the broker holds ``count`` send-backs at delay ``level``
    (queue level-1 of SCHEDULE_TOPIC_XXXX): ali-ons sends CONSUMER_SEND_MSG_BACK after
    its listener returns, so the clock may move only once they are in."""
    deadline = time.monotonic() + 20
    while max_offset(port, "SCHEDULE_TOPIC_XXXX", level - 1) < count:
        assert time.monotonic() < deadline, f"no {count} send-backs at level {level}; events: {driver.events}"
        time.sleep(0.02)


def failures(events, body: str) -> list[int]:
    return [e["reconsumeTimes"] for e in events if e["event"] == "failed" and e["body"] == body]


def test_ali_ons_produces_consumes_retries_and_dead_letters(emulator):
    port = emulator.port
    # The topic is created up front, as with mqadmin updateTopic (ali-ons, unlike the
    # Java client, has no fallback to TBW102 for an unknown topic).
    created = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "topic", "create", TOPIC, "--queues", "4",
                              "--server", emulator.address], capture_output=True, text=True, timeout=30)
    assert created.returncode == 0, created.stderr

    driver = OnsDriver(emulator.address, ok_count=6, poison_count=2)
    try:
        # Produce: SEND_MESSAGE_V2 with numeric extFields, answered in JSON.
        events = driver.wait_for(lambda ev: len([e for e in ev if e["event"] == "sent"]) == 8)
        sent = {e["body"]: e for e in driver.of("sent")}
        assert all(e["status"] == "SEND_OK" for e in sent.values())
        assert sum(max_offset(port, TOPIC, q) for q in range(4)) == 8

        # Consume: every ok-* once; both poison messages fail on their first delivery.
        driver.wait_for(lambda ev: len({e["body"] for e in ev if e["event"] == "consumed"}) == 6
                        and all(failures(ev, f"poison-{i}") == [0] for i in range(2)))
        for e in driver.of("consumed"):
            assert e["msgId"] == sent[e["body"]]["msgId"] and e["reconsumeTimes"] == 0

        # Each failure goes back with CONSUMER_SEND_MSG_BACK, delayLevel 0: the broker
        # picks level 3 + reconsumeTimes. The copy waits in the schedule, not in
        # %RETRY%CG_ONS, until its level's delay has passed to the millisecond; then
        # ali-ons gets it again. The whole default ladder, 10 s ... 2 h.
        retry_topic = "%RETRY%" + GROUP
        for attempt in range(1, MAX_RECONSUME + 1):
            level = 2 + attempt
            wait_sent_back(port, level, 2, driver)
            in_retry = max_offset(port, retry_topic)
            delay_ms = LEVELS.delay_ms(level)
            clock_advance(emulator, f"{delay_ms - 1}ms")
            assert max_offset(port, retry_topic) == in_retry, f"level {level} delivered early"
            clock_advance(emulator, "1ms")
            assert max_offset(port, retry_topic) == in_retry + 2, f"level {level} not delivered on time"
            driver.wait_for(lambda ev: all(failures(ev, f"poison-{i}") == list(range(attempt + 1))
                                           for i in range(2)))

        # The 17th failure (reconsumeTimes 16 = maxReconsumeTimes) goes to %DLQ%CG_ONS at once.
        dlq = "%DLQ%" + GROUP
        deadline = time.monotonic() + 20
        while max_offset(port, dlq) < 2:
            assert time.monotonic() < deadline, "the DLQ did not receive both poison messages"
            time.sleep(0.02)
        for i in range(2):
            body = f"poison-{i}"
            reply = admin_call(port, RQ.QUERY_MESSAGE, {"topic": dlq, "key": body, "maxNum": 32,
                                                        "beginTimestamp": 0, "endTimestamp": 2**62})
            assert reply.code == RC.SUCCESS, reply.remark
            (record,) = list(iter_records(reply.body, check_crc=True))
            assert record.body.decode() == body
            assert record.reconsume_times == MAX_RECONSUME + 1
            assert record.properties[Prop.ORIGIN_MESSAGE_ID] == sent[body]["msgId"]
            assert record.properties[Prop.RETRY_TOPIC] == TOPIC
            assert record.properties[Prop.TAGS] == "TagP"

        # The retried copies ali-ons saw kept the first copy's id as originMsgId.
        for e in driver.of("failed"):
            if e["reconsumeTimes"] > 0:
                assert e["originMsgId"] == sent[e["body"]]["msgId"] and e["topic"] == TOPIC

        # Nothing more: more virtual hours bring no further delivery of a dead letter.
        clock_advance(emulator, "3h")
        driver.close()
    finally:
        driver.kill()

    assert all(len(failures(driver.events, f"poison-{i}")) == MAX_RECONSUME + 1 for i in range(2))
    # The client never had to fall back to re-sending or local retry: every
    # CONSUMER_SEND_MSG_BACK succeeded. The only errors are the planted failures and
    # the %RETRY% route looked up before the first heartbeat created that topic
    # (a real broker answers the same for a brand-new group).
    for e in driver.of("error"):
        assert "planted failure" in e["text"] or f"topic: {retry_topic}" in e["text"], e
    assert not [e for e in driver.of("log") if "drop it" in e["text"] or "no handler" in e["text"]]

    # Offsets were committed (UPDATE_CONSUMER_OFFSET, and on close) up to the end of
    # every queue of the topic and of the retry topic.
    for topic, queues in ((TOPIC, 4), (retry_topic, 1)):
        for q in range(queues):
            reply = admin_call(port, RQ.QUERY_CONSUMER_OFFSET,
                               {"topic": topic, "consumerGroup": GROUP, "queueId": q})
            assert reply.code == RC.SUCCESS, (topic, q, reply.remark)
            assert int(reply.header("offset")) == max_offset(port, topic, q), (topic, q)


def test_ali_ons_falls_back_to_the_other_broker_when_the_send_back_is_refused(tmp_path):
    """Seed 004 against two brokers: poison-0 sits on broker-a, whose write permission is
    then switched off; ali-ons' CONSUMER_SEND_MSG_BACK to broker-a gets NO_PERMISSION, and
    the client publishes the retry copy itself (its default producer, delay level 0) to
    %RETRY%CG_ONS - which the route now offers on broker-b only."""
    from rocketmq_emulator.broker.cli.main import main as cli
    from rocketmq_emulator.client_sdk import Message, MessageQueue, Producer, RemoteBroker

    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", brokers=2).start()
    driver = None
    try:
        assert cli(["topic", "create", TOPIC, "--queues", "1", "--server", server.address]) == 0
        remote = RemoteBroker(server.address)
        producer = Producer("PG_SDK", remote).start()
        producer.send(Message(TOPIC, b"poison-0", tags="TagP", keys="poison-0"), MessageQueue(TOPIC, "broker-a", 0))
        producer.shutdown()
        remote.close()
        assert cli(["broker", "perm", "broker-a", "--write", "off", "--server", server.address]) == 0

        driver = OnsDriver(server.address, ok_count=8, poison_count=0)
        driver.wait_for(lambda ev: failures(ev, "poison-0") == [0, 1]
                        and len({e["body"] for e in ev if e["event"] == "consumed"}) == 8)
        # ali-ons took the routes from the name server: with broker-a read-only it produced
        # to broker-b only (an offsetMsgId names its broker's address), and consumed from both
        ports = {int(e["msgId"][8:16], 16) for e in driver.of("sent")}
        assert ports == {server.broker_ports["broker-b"]}
        retry = "%RETRY%" + GROUP
        assert max_offset(server.broker_ports["broker-b"], retry) == 1      # the client's own copy
        reply = admin_call(server.broker_ports["broker-b"], RQ.QUERY_MESSAGE, {
            "topic": retry, "key": "poison-0", "maxNum": 32, "beginTimestamp": 0, "endTimestamp": 2**62})
        assert reply.code == RC.SUCCESS, reply.remark
        (copy,) = list(iter_records(reply.body, check_crc=True))
        assert copy.body == b"poison-0" and copy.properties[Prop.RETRY_TOPIC] == TOPIC
        assert copy.properties[Prop.RECONSUME_TIME] == "1"
        refused = [e for e in driver.of("error") if "sending message is forbidden" in e["text"]]
        assert refused, f"ali-ons did not report the refused send-back; events: {driver.events}"
        driver.close()
    finally:
        if driver is not None:
            driver.close()
        server.stop()


def test_ali_ons_spreads_over_the_brokers_of_a_cluster(tmp_path):
    """`serve --brokers 2`: ali-ons finds both brokers through the name server, produces to
    the queues of both and consumes from both."""
    from rocketmq_emulator.broker.cli.main import main as cli

    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", brokers=2).start()
    driver = None
    try:
        assert cli(["topic", "create", TOPIC, "--queues", "2", "--server", server.address]) == 0
        driver = OnsDriver(server.address, ok_count=12, poison_count=0)
        driver.wait_for(lambda ev: len({e["body"] for e in ev if e["event"] == "consumed"}) == 12)
        ports = [int(e["msgId"][8:16], 16) for e in driver.of("sent")]
        assert set(ports) == set(server.broker_ports.values())
        for name, port in server.broker_ports.items():
            assert sum(max_offset(port, TOPIC, q) for q in range(2)) == ports.count(port), name
        driver.close()
    finally:
        if driver is not None:
            driver.close()
        server.stop()


def test_ali_ons_subscribes_by_sql92_and_gets_only_the_messages_its_selector_takes(tmp_path):
    """A 4.x SQL92 subscription from a real client (ali-ons' {expressionType: 'SQL92'}),
    on a broker with enablePropertyFilter: heartbeat and pulls carry the expression, and
    only the messages whose properties match are delivered (issue 51, item 3)."""
    conf = tmp_path / "broker.conf"
    conf.write_text("enablePropertyFilter=true\n")
    server = EmulatorProcess(tmp_path / "data", "--clock", "virtual", "--config", str(conf)).start()
    created = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "topic", "create", TOPIC, "--queues", "4",
                              "--server", server.address], capture_output=True, text=True, timeout=30)
    assert created.returncode == 0, created.stderr
    driver = OnsDriver(server.address, ok_count=8, poison_count=0,
                       sql="region = 'eu' AND amount >= 20")
    try:
        expected = {f"ok-{i}" for i in range(8) if i % 2 == 0 and 10 * i >= 20}      # ok-2, ok-4, ok-6
        driver.wait_for(lambda ev: {e["body"] for e in ev if e["event"] == "consumed"} >= expected)
        driver.close()
        assert sorted(e["body"] for e in driver.of("consumed")) == sorted(expected)
        # the only errors: the %RETRY% route looked up before the first heartbeat made it
        # (as in the test above); nothing about the subscription or a pull
        for e in driver.of("error"):
            assert f"topic: %RETRY%{GROUP}" in e["text"], e
        assert [e for e in driver.of("log") if e["level"] == "error"] == []
    finally:
        driver.kill()
        server.stop()
