"""The MQTT bridge against a real mosquitto and a real `rocketmq-emulator serve`."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import aiomqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ
from rocketmq_emulator.store.records import iter_records

from tests.support.processes import wait_for
from tests.support.remoting import RawClient

pytestmark = pytest.mark.interop
LADDER_S = [10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]


def publish(port, items, qos=1):
    """items: (topic, payload, user properties) → published with QoS 1, each PUBACKed."""
    async def run():
        async with aiomqtt.Client("127.0.0.1", port, protocol=aiomqtt.ProtocolVersion.V5) as c:
            for topic, payload, user in items:
                props = None
                if user:
                    props = Properties(PacketTypes.PUBLISH)
                    props.UserProperty = list(user.items())
                await c.publish(topic, payload, qos=qos, properties=props)
    asyncio.run(asyncio.wait_for(run(), 20))


def read_queue(client: RawClient, topic, queue_id=0):
    out, off = [], 0
    while True:
        resp = client.call(RemotingCommand.request(RQ.PULL_MESSAGE, {
            "consumerGroup": "inspector", "topic": topic, "queueId": queue_id, "queueOffset": off,
            "maxMsgNums": 32, "sysFlag": 4, "commitOffset": 0, "suspendTimeoutMillis": 0, "subVersion": 0,
            "subscription": "*"}))
        if resp.code != 0:
            return out
        out.extend(iter_records(resp.body))
        off = int(resp.ext_fields["nextBeginOffset"])


def read_topic(client: RawClient, topic, queues=4):
    return [r for q in range(queues) for r in read_queue(client, topic, q)]


def test_ingress_round_trip_with_tag_keys_and_properties(mosquitto, emulator):
    emu = emulator("--mqtt", f"mqtt://127.0.0.1:{mosquitto.port}")
    client = RawClient(emu.port)
    wait_bridge(mosquitto.port, client)
    publish(mosquitto.port, [("rocketmq/Orders/TagA", b"order-1", {"keys": "order-1 customer-7", "color": "red"}),
                             ("rocketmq/Orders", b"plain", None)])
    recs = wait_for(lambda: (r := read_topic(client, "Orders")) and len(r) == 2 and r)
    by_body = {r.body: r for r in recs}
    tagged = by_body[b"order-1"]
    assert tagged.properties["TAGS"] == "TagA" and tagged.properties["KEYS"] == "order-1 customer-7"
    assert tagged.properties["color"] == "red"
    assert "TAGS" not in by_body[b"plain"].properties
    client.close()


def test_illegal_topics_and_oversize_payloads_are_dropped_not_fatal(mosquitto, emulator, tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("maxMessageSize=100\n")
    emu = emulator("--mqtt", f"mqtt://127.0.0.1:{mosquitto.port}", "--config", str(conf))
    client = RawClient(emu.port)
    wait_bridge(mosquitto.port, client)
    publish(mosquitto.port, [("rocketmq/bad topic!", b"x", None), ("rocketmq/a/b/c", b"x", None),
                             ("rocketmq/Big", b"z" * 101, None), ("rocketmq/Fine", b"ok", None)])
    assert [r.body for r in wait_for(lambda: read_topic(client, "Fine"))] == [b"ok"]
    assert read_topic(client, "Big") == []
    assert emu.proc.poll() is None
    client.close()


def test_acknowledged_ingress_survives_a_killed_server(mosquitto, emulator, tmp_path):
    """PUBACK goes to mosquitto only after the message is stored and flushed: what the
    bridge acknowledged survives SIGKILL, and what it had not acknowledged is redelivered
    by mosquitto to the restarted bridge (same client id, persistent session)."""
    url = f"mqtt://127.0.0.1:{mosquitto.port}"
    emu = emulator("--mqtt", url, data_dir=tmp_path / "s")
    probe = RawClient(emu.port)
    wait_bridge(mosquitto.port, probe)
    probe.close()
    publish(mosquitto.port, [("rocketmq/Durable", f"m{i}".encode(), None) for i in range(200)])
    emu.kill()                                     # SIGKILL: no shutdown flush
    again = emulator("--mqtt", url, data_dir=tmp_path / "s")
    client = RawClient(again.port)
    expected = {f"m{i}".encode() for i in range(200)}
    bodies = wait_for(lambda: (b := [r.body for r in read_topic(client, "Durable")]) and set(b) == expected and b,
                      timeout=20)
    assert set(bodies) == expected                 # nothing lost (at-least-once: a repeat is allowed)
    client.close()


def test_bridge_resumes_after_the_mqtt_broker_restarts(mosquitto, emulator):
    emu = emulator("--mqtt", f"mqtt://127.0.0.1:{mosquitto.port}")
    client = RawClient(emu.port)
    wait_bridge(mosquitto.port, client)
    publish(mosquitto.port, [("rocketmq/Resume", b"before", None)])
    wait_for(lambda: read_topic(client, "Resume"))
    mosquitto.stop()
    assert client.call(RemotingCommand.request(RQ.GET_BROKER_CLUSTER_INFO)).code == 0   # still serving
    mosquitto.start()
    wait_bridge(mosquitto.port, client)
    publish(mosquitto.port, [("rocketmq/Resume", b"after", None)])
    got = wait_for(lambda: (r := [x.body for x in read_topic(client, "Resume")]) and len(r) == 2 and r)
    assert sorted(got) == [b"after", b"before"]
    client.close()


def test_event_feed_shows_the_whole_ladder_and_the_dlq_move(mosquitto, emulator):
    emu = emulator("--mqtt", f"mqtt://127.0.0.1:{mosquitto.port}", "--clock", "virtual")
    client = RawClient(emu.port)
    wait_bridge(mosquitto.port, client)
    events = []

    async def collect(stop):
        async with aiomqtt.Client("127.0.0.1", mosquitto.port) as c:
            await c.subscribe("rocketmq-events/#", qos=1)
            stop.set_result(None)
            async for m in c.messages:
                events.append((str(m.topic), json.loads(m.payload)))
                if str(m.topic).endswith("/dead_lettered"):
                    return

    async def scenario():
        ready = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(collect(ready))
        await ready
        await asyncio.to_thread(_drive_ladder, client, emu.address)
        await asyncio.wait_for(task, 30)
    asyncio.run(scenario())
    kinds = [t.split("/")[-1] for t, _ in events]
    assert kinds == ["sent_back", "redelivered"] * 16 + ["dead_lettered"]
    assert all(t.split("/")[1] == "G" for t, _ in events)
    sent = [e for t, e in events if t.endswith("/sent_back")]
    assert [e["delay_level"] for e in sent] == list(range(3, 19))
    assert [e["reconsume_times"] for e in sent] == list(range(1, 17))
    assert [e["due_ms"] - e["time_ms"] for e in sent] == [s * 1000 for s in LADDER_S]
    assert all(e["real_topic"] == "T" and e["origin_msg_id"] == sent[0]["origin_msg_id"] for e in sent)
    dead = events[-1][1]
    assert dead["topic"] == "%DLQ%G" and dead["reconsume_times"] == 17
    assert dead["origin_msg_id"] == sent[0]["origin_msg_id"]
    client.close()


def _drive_ladder(client: RawClient, address: str):
    send = RemotingCommand.request(RQ.SEND_MESSAGE_V2, {"a": "P", "b": "T", "c": "TBW102", "d": 1, "e": 0, "f": 0,
                                                        "g": 0, "h": 0, "i": ""}, b"poison")
    assert client.call(send).code == 0
    offset = _phys(client, "T", 0)
    for i, seconds in enumerate(LADDER_S):
        back = RemotingCommand.request(RQ.CONSUMER_SEND_MSG_BACK, {"offset": offset, "group": "G", "delayLevel": 0})
        assert client.call(back).code == 0
        out = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "clock", "advance", f"{seconds}s",
                              "--server", address], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        offset = _phys(client, "%RETRY%G", i)
    back = RemotingCommand.request(RQ.CONSUMER_SEND_MSG_BACK, {"offset": offset, "group": "G", "delayLevel": 0})
    assert client.call(back).code == 0


def _phys(client, topic, queue_offset):
    return read_queue(client, topic)[queue_offset].commit_log_offset


def wait_bridge(port: int, client: RawClient, timeout: float = 20.0) -> None:
    """The bridge is up once a probe published to rocketmq/BridgeProbe is stored."""
    import time
    import uuid
    token = uuid.uuid4().hex.encode()            # a probe stored earlier must not count
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            publish(port, [("rocketmq/BridgeProbe", token, None)])
        except Exception:
            time.sleep(0.1)
            continue
        t_end = time.monotonic() + 0.5
        while time.monotonic() < t_end:
            if any(r.body == token for r in read_topic(client, "BridgeProbe")):
                return
            time.sleep(0.02)
    raise AssertionError("the MQTT bridge did not come up")


def test_egress_forwards_a_topic_to_rocketmq_out(mosquitto, emulator):
    emu = emulator("--mqtt", f"mqtt://127.0.0.1:{mosquitto.port}", "--mqtt-egress", "Outbound")
    client = RawClient(emu.port)
    wait_bridge(mosquitto.port, client)
    received = []

    async def scenario():
        async with aiomqtt.Client("127.0.0.1", mosquitto.port) as c:
            await c.subscribe("rocketmq-out/#", qos=1)
            for body in (b"one", b"two"):
                req = RemotingCommand.request(RQ.SEND_MESSAGE_V2, {"a": "P", "b": "Outbound", "c": "TBW102", "d": 4,
                                                                   "e": 0, "f": 0, "g": 0, "h": 0, "i": ""}, body)
                assert await asyncio.to_thread(client.call, req) is not None
            async for m in c.messages:
                received.append((str(m.topic), m.payload))
                if len(received) == 2:
                    return
    asyncio.run(asyncio.wait_for(scenario(), 20))
    assert received == [("rocketmq-out/Outbound", b"one"), ("rocketmq-out/Outbound", b"two")]
    client.close()
