"""Egress is an event-driven consumer of the core: it reads the store when the core
stores a message in a forwarded topic, and not at all while nothing arrives (it used to
poll every 50 ms of real time). In process, against a real mosquitto."""
from __future__ import annotations

import asyncio

import aiomqtt
import pytest

from rocketmq_emulator.broker.fronts.mqtt.bridge import MqttBridge, parse_mqtt_url
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ
from rocketmq_emulator.delay_scheduler import VirtualClock

from tests.support.processes import Mosquitto
from tests.support.remoting import front_of

pytestmark = pytest.mark.interop


def test_egress_reads_nothing_while_idle_and_forwards_at_once(tmp_path):
    mq = Mosquitto(tmp_path)
    mq.start()
    core = BrokerCore.in_memory(VirtualClock())
    core.create_topic("Out", 1)
    reads = []
    get_message = core.store.get_message
    core.store.get_message = lambda *a, **kw: (reads.append(a[0]), get_message(*a, **kw))[1]

    async def scenario():
        bridge = MqttBridge(core, parse_mqtt_url(f"mqtt://127.0.0.1:{mq.port}", egress_topics=("Out",)))
        task = bridge.start()
        async with aiomqtt.Client("127.0.0.1", mq.port) as watcher:
            await watcher.subscribe("rocketmq-out/#", qos=1)
            await asyncio.wait_for(bridge.connected.wait(), 10)
            await asyncio.sleep(0.3)                    # the first scan of the (empty) topics
            before = len(reads)
            await asyncio.sleep(1.0)                    # idle: a 50 ms poller would read ~40 times
            idle_reads = len(reads) - before
            ch = core.connect("127.0.0.1:1")
            front_of(core).handle(RemotingCommand.request(RQ.SEND_MESSAGE_V2, {"a": "P", "b": "Out", "e": 0, "i": ""},
                                                b"forward me"), ch)
            message = await asyncio.wait_for(anext(aiter(watcher.messages)), 10)
            await bridge.stop()
            task.cancel()
            return idle_reads, str(message.topic), bytes(message.payload)

    try:
        idle_reads, topic, payload = asyncio.run(scenario())
    finally:
        mq.stop()
        core.close()
    assert idle_reads == 0
    assert (topic, payload) == ("rocketmq-out/Out", b"forward me")
