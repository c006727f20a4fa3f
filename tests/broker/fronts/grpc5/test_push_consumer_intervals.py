"""The real Python 5.x PushConsumer (rocketmq-python-client 5.1.2) walks seed 002's retry
table exactly: after its n-th failed delivery it nacks with the table's n-th interval, and
the message comes back at that second of the server's clock - not one second before. The
clock is moved to one second short of each interval (nothing comes back), then by that
second (it does): every interval is checked to the second, on the in-process broker's
virtual clock (rocketmq5_endpoint). Real-time waits are bounded waits for the client."""
from __future__ import annotations

import threading

import pytest

rocketmq = pytest.importorskip("rocketmq", reason="needs the grpc extra: ./dev test installs it")
from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression, Message,  # noqa: E402
                      Producer, PushConsumer)
from rocketmq.v5.consumer.push.message_listener import MessageListener  # noqa: E402

from rocketmq_emulator.broker.retry_lifecycle import ROCKETMQ5_UNORDERED_INTERVALS_MS  # noqa: E402
from tests.support.processes import wait_for  # noqa: E402


class _AlwaysFails(MessageListener):
    def __init__(self):
        self.attempts = []
        self.lock = threading.Lock()

    def consume(self, message):
        with self.lock:
            self.attempts.append(message.delivery_attempt)
        return ConsumeResult.FAILURE


def test_every_retry_of_a_python_push_consumer_waits_its_interval_to_the_second(rocketmq5_endpoint, rocketmq_broker,
                                                                                 time_travel):
    core, lock = rocketmq_broker.core, rocketmq_broker.hub.lock
    config = ClientConfiguration(rocketmq5_endpoint, Credentials(), request_timeout=3)
    rocketmq_broker.create_topic("Intervals")
    producer = Producer(config, ("Intervals",))
    producer.startup()
    msg = Message()
    msg.topic, msg.body = "Intervals", b"always fails"
    producer.send(msg)
    producer.shutdown()
    listener = _AlwaysFails()
    consumer = PushConsumer(config, "ladder", listener, {"Intervals": FilterExpression("*")})
    consumer.startup()

    def nacked():
        """The delivery's visible time once the client has nacked it (no longer renewed)."""
        with lock:
            flights = core.pops.in_flight("ladder")
            return [(visible_at, core.clock.now_ms()) for _, _, visible_at, renewed in flights if not renewed]

    try:
        table = ROCKETMQ5_UNORDERED_INTERVALS_MS + (ROCKETMQ5_UNORDERED_INTERVALS_MS[-1],)  # the 17th: last reused
        waited = []
        for attempt, interval in enumerate(table, start=1):
            wait_for(lambda: len(listener.attempts) >= attempt, timeout=30)
            [(visible_at, now)] = wait_for(nacked, timeout=30)
            waited.append(visible_at - now)
            time_travel(interval - 1000)                           # one second short: nothing comes back
            with lock:
                assert core.pops.in_flight("ladder"), f"attempt {attempt} came back before {interval} ms"
            assert len(listener.attempts) == attempt
            time_travel(1000)                                      # its second: back, or (17th) in the DLQ
        assert waited == list(table)
        assert listener.attempts == list(range(1, 18))
        with lock:
            assert not core.pops.in_flight("ladder")
        assert [m.body for m in rocketmq_broker.dlq_messages("ladder")] == [b"always fails"]
    finally:
        consumer.shutdown()
