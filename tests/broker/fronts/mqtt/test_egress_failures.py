"""Egress publishes the MQTT broker refuses are consumption failures: they take the
send-back / %RETRY% / %DLQ% path of the bridge's consumer group.

mosquitto refuses a publish its ACL denies with PUBACK reason 0x87 (Not authorized) to an
MQTT 5 client; the bridge must read that code (aiomqtt drops it) instead of counting the
message as forwarded.
"""
from __future__ import annotations

import asyncio
import json
import threading
import time

import aiomqtt
import paho.mqtt.client as paho
import pytest

from rocketmq_emulator.broker.fronts.mqtt.bridge import BRIDGE_CONSUMER_GROUP
from rocketmq_emulator.broker.fronts.remoting.protocol import EMULATOR_CLOCK_ADVANCE, RemotingCommand, RequestCode as RQ

from tests.support.processes import Mosquitto, wait_for
from tests.support.remoting import RawClient
from tests.broker.fronts.mqtt.test_bridge import LADDER_S, read_topic, wait_bridge

pytestmark = pytest.mark.interop
DENY_GUARDED = "topic readwrite #\ntopic deny rocketmq-out/Guarded\n"
ALLOW_ALL = "topic readwrite #\n"
EVENTS = f"rocketmq-events/{BRIDGE_CONSUMER_GROUP}"


class MqttCollector:
    """Subscribes (QoS 1) in a background thread and keeps every (topic, payload) seen."""

    def __init__(self, port: int, filters: list[str]):
        self.port, self.filters = port, filters
        self.seen: list[tuple[str, bytes]] = []
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self):
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        try:
            async with aiomqtt.Client("127.0.0.1", self.port) as c:
                for f in self.filters:
                    await c.subscribe(f, qos=1)
                self._ready.set()
                async for m in c.messages:
                    self.seen.append((str(m.topic), bytes(m.payload)))
        except asyncio.CancelledError:
            pass

    def on(self, topic: str) -> list[bytes]:
        return [p for t, p in list(self.seen) if t == topic]

    def __enter__(self):
        self._thread.start()
        assert self._ready.wait(10), "collector did not subscribe"
        return self

    def __exit__(self, *exc):
        self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(10)


@pytest.fixture
def guarded(tmp_path, emulator):
    """mosquitto denying rocketmq-out/Guarded, and a virtual-clock server forwarding
    Guarded to it: (mosquitto, raw client of the server)."""
    (tmp_path / "mq").mkdir()
    mq = Mosquitto(tmp_path / "mq", acl=DENY_GUARDED)
    mq.start()
    emu = emulator("--mqtt", f"mqtt://127.0.0.1:{mq.port}", "--mqtt-egress", "Guarded", "--clock", "virtual")
    client = RawClient(emu.port)
    wait_bridge(mq.port, client)
    yield mq, client
    client.close()
    assert emu.proc.poll() is None      # the server survived every refusal
    emu.stop()
    mq.stop()


def send(client: RawClient, topic: str, body: bytes):
    req = RemotingCommand.request(RQ.SEND_MESSAGE_V2, {"a": "P", "b": topic, "c": "TBW102", "d": 4, "e": 0,
                                                       "f": 0, "g": 0, "h": 0, "i": ""}, body)
    assert client.call(req).code == 0


def advance(client: RawClient, seconds: int):
    reply = client.call(RemotingCommand.request(EMULATOR_CLOCK_ADVANCE, {"duration": f"{seconds}s"}))
    assert reply.code == 0, reply.remark


def wait_until_publish_allowed(port: int, topic: str, timeout: float = 10.0):
    """mosquitto reloads its ACL asynchronously after SIGHUP: probe until it lets a publish through."""
    c = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    acks: dict[int, object] = {}
    c.on_publish = lambda _c, _u, mid, rc, _p: acks.__setitem__(mid, rc)
    c.connect("127.0.0.1", port)
    c.loop_start()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            mid = c.publish(topic, b"acl-probe", qos=1).mid
            rc = wait_for(lambda: acks.get(mid))
            if not rc.is_failure:
                return
        raise AssertionError(f"mosquitto still refuses {topic}")
    finally:
        c.loop_stop()
        c.disconnect()


def test_a_refused_egress_publish_is_sent_back_and_forwarded_on_retry(guarded):
    mq, client = guarded
    with MqttCollector(mq.port, ["rocketmq-events/#", "rocketmq-out/#"]) as feed:
        send(client, "Guarded", b"precious")
        sent = wait_for(lambda: feed.on(f"{EVENTS}/sent_back"))
        event = json.loads(sent[0])
        assert (event["real_topic"], event["reconsume_times"], event["delay_level"]) == ("Guarded", 1, 3)
        assert b"precious" not in feed.on("rocketmq-out/Guarded")        # refused: nobody got it

        mq.set_acl(ALLOW_ALL)
        wait_until_publish_allowed(mq.port, "rocketmq-out/Guarded")
        advance(client, 10)                                              # level 3 = 10 s
        wait_for(lambda: b"precious" in feed.on("rocketmq-out/Guarded"))
        assert feed.on(f"{EVENTS}/sent_back") == sent                    # the retry went through
    retry_copy, = read_topic(client, f"%RETRY%{BRIDGE_CONSUMER_GROUP}", queues=1)
    assert (retry_copy.body, retry_copy.reconsume_times) == (b"precious", 1)
    assert retry_copy.properties["RETRY_TOPIC"] == "Guarded"


def test_an_always_refused_egress_message_climbs_the_ladder_into_the_dlq(guarded):
    mq, client = guarded
    with MqttCollector(mq.port, ["rocketmq-events/#", "rocketmq-out/#"]) as feed:
        send(client, "Guarded", b"undeliverable")
        for attempt, seconds in enumerate(LADDER_S, start=1):
            wait_for(lambda: len(feed.on(f"{EVENTS}/sent_back")) == attempt)
            advance(client, seconds)
        dead = json.loads(wait_for(lambda: feed.on(f"{EVENTS}/dead_lettered"))[0])
        sent = [json.loads(p) for p in feed.on(f"{EVENTS}/sent_back")]
        assert feed.on("rocketmq-out/Guarded") == []
    assert [e["delay_level"] for e in sent] == list(range(3, 19))
    assert dead["topic"] == f"%DLQ%{BRIDGE_CONSUMER_GROUP}" and dead["reconsume_times"] == 17
    letter, = read_topic(client, f"%DLQ%{BRIDGE_CONSUMER_GROUP}", queues=1)
    assert letter.body == b"undeliverable"
    assert letter.properties["RETRY_TOPIC"] == "Guarded"
    assert letter.properties["ORIGIN_MESSAGE_ID"] == sent[0]["origin_msg_id"]
