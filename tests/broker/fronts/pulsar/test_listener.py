"""The Pulsar listener (broker/fronts/pulsar/listener.py) over a real socket: a broker
shutting down closes its producers and consumers first (CLOSE_PRODUCER, CLOSE_CONSUMER),
as Pulsar does when it unloads a topic, so clients know to reconnect."""
from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from rocketmq_emulator.broker.fronts.pulsar.listener import PulsarServer  # noqa: E402
from rocketmq_emulator.broker.core import BrokerCore  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar import schema as s  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.frames import FrameDecoder, encode_simple  # noqa: E402


def _frame(**fields) -> bytes:
    return encode_simple(s.BaseCommand(**fields).SerializeToString())


async def _read_until_closed(reader) -> list:
    decoder, frames = FrameDecoder(), []
    while chunk := await asyncio.wait_for(reader.read(65536), 10):
        frames += [s.BaseCommand.FromString(f.command) for f in decoder.feed(chunk)]
    return frames


def test_a_stopping_broker_closes_its_producers_and_consumers_before_the_connection():
    async def scenario():
        server = PulsarServer(BrokerCore.in_memory(), "127.0.0.1", 0, lambda: None)
        await server.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        topic = "persistent://public/default/bye"
        writer.write(_frame(type=s.Type.CONNECT, connect={"client_version": "t", "protocol_version": 20})
                     + _frame(type=s.Type.PRODUCER, producer={"topic": topic, "producer_id": 4, "request_id": 1})
                     + _frame(type=s.Type.SUBSCRIBE, subscribe={"topic": topic, "subscription": "s", "consumer_id": 7,
                                                                "request_id": 2, "subType": s.SubType.Shared}))
        await writer.drain()
        decoder, got = FrameDecoder(), []
        while len(got) < 3:                          # CONNECTED, PRODUCER_SUCCESS, SUCCESS
            got += decoder.feed(await asyncio.wait_for(reader.read(65536), 10))
        await server.stop()
        frames = await _read_until_closed(reader)
        writer.close()
        return frames

    frames = asyncio.run(scenario())
    assert [(f.type, f.close_producer.producer_id if f.HasField("close_producer") else f.close_consumer.consumer_id)
            for f in frames] == [(s.Type.CLOSE_PRODUCER, 4), (s.Type.CLOSE_CONSUMER, 7)]
