"""The Pulsar client of the SDK: ``PulsarClient``, its producers and consumers.

``PulsarClient(embedded)`` talks to an in-process broker (``EmbeddedBroker``, the pytest
fixture's) through its Pulsar front, on its clock: time travel moves nack delays, ack
timeouts and retry-letter delays. ``PulsarClient("pulsar://host:6650")`` talks to a
broker over TCP (``rocketmq-emulator serve`` or a real Pulsar) on the real clock.

Threads: as the rest of this SDK, one loop (client_sdk/runtime.py) runs everything; a
blocking call (``send``, ``receive``, ``subscribe``) runs it until its answer is there.
A listener-style consumer's listener runs on that loop too: over TCP, keep the loop
running with ``client.run_for(...)`` / ``client.run_until(...)`` (in process the
embedded broker's ``advance`` / ``run_until_idle`` do it).
"""
from __future__ import annotations

from typing import Callable

import rocketmq_emulator.broker.fronts.pulsar.schema as s
from rocketmq_emulator.delay_scheduler import SystemClock

from ..runtime import ClientRuntime, to_millis
from .errors import PulsarClientError, PulsarTimeout
from .links import InProcessLink, TcpLink, parse_service_url
from .messages import MessageId
from .connection_state import Pending, Session

__all__ = ["PulsarClient", "Producer"]


class PulsarClient:
    def __init__(self, target, *, operation_timeout_seconds: float = 30) -> None:
        """``target``: an ``EmbeddedBroker`` (in process) or a ``pulsar://host:port`` URL."""
        self.operation_timeout_ms = int(operation_timeout_seconds * 1000)
        if isinstance(target, str):
            host, port = parse_service_url(target)
            self.runtime = ClientRuntime(SystemClock())
            self.service_url = f"pulsar://{host}:{port}"

            def link(on_frames, on_lost):
                return TcpLink(self.runtime, host, port, on_frames, on_lost)
        elif hasattr(target, "core") and hasattr(target, "runtime"):
            self.runtime = target.runtime
            self.service_url = "in-process"

            def link(on_frames, on_lost):
                return InProcessLink(target, on_frames)
        else:
            raise TypeError(f"PulsarClient takes an EmbeddedBroker or a pulsar://host:port URL, not {target!r}")
        self.session = Session(self.runtime, link)
        self.wait(self.session.start())
        self._closables: list = []

    # -- producers and consumers ----------------------------------------------------------
    def create_producer(self, topic: str, *, producer_name: str | None = None,
                        initial_subscription_name: str | None = None) -> "Producer":
        producer = Producer(self, topic, producer_name, initial_subscription_name)
        self._closables.append(producer)
        return producer

    def subscribe(self, topic: str, subscription_name: str, **options):
        """A consumer (consumer.py ``Consumer``; the options are its keyword arguments)."""
        from .consumer import Consumer
        consumer = Consumer(self, topic, subscription_name, **options)
        self._closables.append(consumer)
        return consumer

    # -- the loop -------------------------------------------------------------------------
    def wait(self, pending: Pending, timeout_ms: int | None = None):
        """Run the loop until ``pending`` is answered; its reply, or its error raised."""
        timeout = self.operation_timeout_ms if timeout_ms is None else timeout_ms
        if not pending.done:
            self.runtime.run_until(lambda: pending.done, timeout)
        if not pending.done:
            raise PulsarTimeout(f"no answer from the broker within {timeout} ms")
        if pending.error is not None:
            raise pending.error
        return pending.reply

    def run_for(self, duration: int | str) -> None:
        """Run the client loop for ``duration`` (listeners, timers): real time over TCP,
        virtual time in process."""
        self.runtime.run_for(duration)

    def run_until(self, predicate: Callable[[], bool], timeout: int | str = "30s") -> bool:
        return self.runtime.run_until(predicate, timeout)

    def now_ms(self) -> int:
        return self.runtime.now_ms()

    def close(self) -> None:
        for c in reversed(self._closables):
            c.close()
        self._closables.clear()
        if self.session.lost is None:
            self.session.close()

    def __enter__(self) -> "PulsarClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def lookup(self, topic: str) -> None:
        """PARTITIONED_METADATA and LOOKUP, as the real clients do before PRODUCER and
        SUBSCRIBE (a Pulsar broker takes ownership of the topic then). A partitioned topic
        and a redirect to another broker are refused: this client talks to one topic on
        one broker."""
        meta = self.wait(self.session.request("partitionMetadata", s.Type.PARTITIONED_METADATA, topic=topic))
        if meta.response == s.PartitionedLookupType.Failed:
            raise PulsarClientError(f"{topic}: {meta.message or 'the broker refused the topic'}")
        if meta.partitions > 0:
            raise PulsarClientError(f"{topic} is partitioned ({meta.partitions} partitions); this client takes one "
                                    f"partition at a time: {topic}-partition-0 ... -{meta.partitions - 1}")
        reply = self.wait(self.session.request("lookupTopic", s.Type.LOOKUP, topic=topic))
        if reply.response == s.LookupType.Failed:
            raise PulsarClientError(f"lookup of {topic} failed: {reply.message}")
        if reply.response == s.LookupType.Redirect:
            raise PulsarClientError(f"{topic} is served by another broker ({reply.brokerServiceUrl}); this client "
                                    f"talks to one broker")


class Producer:
    """Sends to one topic; ``send`` waits for the receipt, ``send_async`` calls back."""

    def __init__(self, client: PulsarClient, topic: str, producer_name: str | None,
                 initial_subscription_name: str | None) -> None:
        self.client = client
        self.session = client.session
        self.topic = topic
        self.producer_id = self.session.next_id()
        client.lookup(topic)
        fields = {"topic": topic, "producer_id": self.producer_id}
        if producer_name:
            fields["producer_name"] = producer_name
        if initial_subscription_name:
            fields["initial_subscription_name"] = initial_subscription_name
        reply = client.wait(self.session.request("producer", s.Type.PRODUCER, **fields))
        self.producer_name = reply.producer_name
        self._sequence = max(reply.last_sequence_id, -1) + 1
        self.closed = False

    def send(self, data: bytes, properties: dict | None = None, *, partition_key: str | None = None,
             deliver_after_ms: int | None = None, deliver_at_ms: int | None = None) -> MessageId:
        pending = self._send(data, properties, partition_key, deliver_after_ms, deliver_at_ms, None)
        mid = self.client.wait(pending)
        return MessageId(mid.ledgerId, mid.entryId, mid.partition)

    def send_async(self, data: bytes, callback: Callable[[Exception | None, MessageId | None], None],
                   properties: dict | None = None, *, partition_key: str | None = None,
                   deliver_after_ms: int | None = None, deliver_at_ms: int | None = None) -> None:
        """``callback(error, message_id)`` on the client loop when the receipt (or the error) comes."""
        def done(p: Pending) -> None:
            if p.error is not None:
                callback(p.error, None)
            else:
                callback(None, MessageId(p.reply.ledgerId, p.reply.entryId, p.reply.partition))
        self._send(data, properties, partition_key, deliver_after_ms, deliver_at_ms, done)

    def _send(self, data, properties, partition_key, deliver_after_ms, deliver_at_ms, callback) -> Pending:
        if self.closed:
            raise PulsarClientError(f"the producer of {self.topic} is closed")
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"a message is bytes, not {type(data).__name__}")
        now = self.client.now_ms()
        meta = s.MessageMetadata(producer_name=self.producer_name, sequence_id=self._sequence, publish_time=now)
        for k, v in (properties or {}).items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"message properties are str -> str, got {k!r}: {v!r}")
            meta.properties.add(key=k, value=v)
        if partition_key:
            meta.partition_key = partition_key
        if deliver_after_ms is not None:
            meta.deliver_at_time = now + to_millis(deliver_after_ms)
        elif deliver_at_ms is not None:
            meta.deliver_at_time = int(deliver_at_ms)
        sequence = self._sequence
        self._sequence += 1
        return self.session.send(self.producer_id, sequence, meta.SerializeToString(), bytes(data), callback)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.session.lost is None:
            self.client.wait(self.session.request("close_producer", s.Type.CLOSE_PRODUCER,
                                                  producer_id=self.producer_id))
