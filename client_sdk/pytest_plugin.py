"""pytest plugin of rocketmq-emulator (registered as the ``rocketmq_emulator`` entry point).

Fixtures (each test gets its own broker on a VirtualClock with an in-memory store):

    rocketmq_broker     an EmbeddedBroker: create_topic, advance("2h"), run_until_idle(),
                        messages(topic), retry_messages(group), dlq_messages(group),
                        scheduled_messages(), committed_offset(group, topic, qid),
                        committed_offsets(group, topic), set_writeable(False), events
    rocketmq_producer   factory: rocketmq_producer(group="test_producer_group", **options)
                        -> a started Producer
    rocketmq_consumer   factory: rocketmq_consumer(group, topic, expression="*", listener=fn,
                        orderly=False, **options) -> a started PushConsumer
    time_travel         time_travel("10s"): advance the virtual clock, delivering what is due
    rocketmq5_endpoint  "127.0.0.1:PORT": a real RocketMQ 5.x gRPC endpoint (apache.rocketmq.v2)
                        on the same broker and virtual clock, for the real 5.x clients:
                        ClientConfiguration(rocketmq5_endpoint, Credentials()); time_travel
                        moves its invisible times and delays too (needs the grpc extra)
    pulsar_endpoint     "pulsar://127.0.0.1:PORT": a real Pulsar binary-protocol endpoint on the
                        same broker and virtual clock, for the real Pulsar client; time_travel
                        moves its delayed deliveries (needs the pulsar extra)
    rocketmq_faults     the broker's fault rules (client_sdk/faults.py): rocketmq_faults.add("send",
                        "refuse", topic="Orders", times=1) -> a handle (hits, remove(), a with-block)
    rocketmq_clock      the VirtualClock
    rocketmq_transport  how clients reach the broker: "inprocess" (default) or "loopback"
                        (every command through the real codec); set it for a run with
                        ``--rocketmq-transport=loopback``, or override this fixture
                        (e.g. parametrized) in a conftest or test module

Configure the broker with RocketMQ's broker.conf names through a marker:

    @pytest.mark.rocketmq_broker(autoCreateTopicEnable=False, messageDelayLevel="1s 2s 3s")

Make the broker misbehave for a whole test with a marker (the arguments of
``faults.add``; several markers, several rules, installed before the test runs):

    @pytest.mark.rocketmq_fault("send_back", "refuse", group="billing")

Consumers made by the factory are strict: a listener that returns something other
than a consume status makes the ``time_travel`` / ``run_until_idle`` call raise
ListenerResultError. Everything is shut down after the test.
"""
from __future__ import annotations

import pytest

__all__ = ["rocketmq_broker", "rocketmq_producer", "rocketmq_consumer", "time_travel", "rocketmq_clock", "rocketmq_faults",
           "rocketmq_transport", "rocketmq5_endpoint", "pulsar_endpoint", "pytest_addoption", "pytest_configure"]

TRANSPORTS = ("inprocess", "loopback")


def pytest_addoption(parser) -> None:
    parser.addoption("--rocketmq-transport", choices=TRANSPORTS, default="inprocess",
                     help="how the rocketmq_broker fixture's clients reach it: inprocess (default) or loopback "
                          "(every command encoded and decoded by the real codec)")


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "rocketmq_broker(**broker_conf): broker.conf keys (RocketMQ names) for the rocketmq_broker "
                   "fixture, e.g. autoCreateTopicEnable=False")
    config.addinivalue_line(
        "markers", "rocketmq_fault(operation, action, **matchers): a fault rule on the rocketmq_broker fixture's "
                   "broker for the whole test, e.g. rocketmq_fault('send', 'refuse', topic='Orders', times=1)")


@pytest.fixture
def rocketmq_transport(request) -> str:
    """The transport of the rocketmq_broker fixture's clients (``--rocketmq-transport``)."""
    return request.config.getoption("rocketmq_transport")


@pytest.fixture
def rocketmq_broker(request, rocketmq_transport):
    """An EmbeddedBroker on a VirtualClock with the in-memory store."""
    from .embedded import EmbeddedBroker

    conf = {}
    for marker in reversed(list(request.node.iter_markers("rocketmq_broker"))):
        conf.update(marker.kwargs)
    broker = EmbeddedBroker(transport=rocketmq_transport, **conf)
    try:
        for marker in request.node.iter_markers("rocketmq_fault"):
            broker.faults.add(*marker.args, **marker.kwargs)
    except BaseException:
        broker.close()
        raise
    yield broker
    broker.close()


@pytest.fixture
def rocketmq_faults(rocketmq_broker):
    """The broker's fault rules: ``rocketmq_faults.add(operation, action, **matchers)``
    returns a handle (``hits``, ``remove()``, a with-block); ``list()``, ``clear()``."""
    return rocketmq_broker.faults


@pytest.fixture
def rocketmq_clock(rocketmq_broker):
    """The broker's VirtualClock (read it; move it with time_travel)."""
    return rocketmq_broker.clock


@pytest.fixture
def rocketmq_producer(rocketmq_broker):
    """Factory: ``rocketmq_producer(group="test_producer_group", **options)`` -> started Producer."""
    return rocketmq_broker.producer


@pytest.fixture
def rocketmq_consumer(rocketmq_broker):
    """Factory: ``rocketmq_consumer(group, topic, expression="*", listener=fn, orderly=False,
    **options)`` -> started PushConsumer (strict about listener results)."""
    return rocketmq_broker.push_consumer


@pytest.fixture
def time_travel(rocketmq_broker):
    """``time_travel("10s")`` / ``time_travel("2h")``: move the virtual clock, delivering
    everything due on the way; returns the new time in ms."""
    return rocketmq_broker.advance


@pytest.fixture
def rocketmq5_endpoint(rocketmq_broker):
    """A 5.x gRPC listener on 127.0.0.1:0 (its own thread) in front of ``rocketmq_broker``:
    4.x SDK clients and real 5.x clients share its topics, groups and clock."""
    listener = _listener(rocketmq_broker, "rocketmq5_endpoint", "grpc5.listener.GrpcListenerThread", "grpc",
                         "grpc", "rocketmq_emulator.broker.fronts.grpc5.stubs")
    yield listener.endpoint
    listener.close()


@pytest.fixture
def pulsar_endpoint(rocketmq_broker):
    """A Pulsar listener on 127.0.0.1:0 (its own thread) in front of ``rocketmq_broker``:
    "pulsar://127.0.0.1:PORT" for the real Pulsar client; time_travel moves its delayed
    deliveries (needs the pulsar extra)."""
    listener = _listener(rocketmq_broker, "pulsar_endpoint", "pulsar.listener.PulsarListenerThread", "pulsar",
                         "google_crc32c", "rocketmq_emulator.broker.fronts.pulsar.schema")
    yield listener.service_url
    listener.close()


@pytest.fixture
def pulsar_client(rocketmq_broker):
    """The SDK's Pulsar client (client_sdk.pulsar_client) on ``rocketmq_broker``, in process
    and on its virtual clock: ``time_travel`` moves nack delays, ack timeouts and
    retry-letter delays (needs the pulsar extra)."""
    _require("pulsar_client", "pulsar", "google_crc32c")
    from .pulsar_client import PulsarClient

    client = PulsarClient(rocketmq_broker)
    yield client
    client.close()


def _listener(broker, fixture: str, thread_class: str, extra: str, *modules: str):
    """A started listener thread of ``thread_class`` on the broker's core (its lock shared)."""
    _require(fixture, extra, *modules)
    import importlib

    module, _, name = thread_class.rpartition(".")
    listener = getattr(importlib.import_module(f"rocketmq_emulator.broker.fronts.{module}"), name)
    return listener(broker.core, broker.hub.share()).start()


def _require(fixture: str, extra: str, *modules: str) -> None:
    """A missing extra fails the test with the one line that says which to install."""
    from rocketmq_emulator.broker.cli.common import missing_extra

    missing = missing_extra(extra, *modules)
    if missing:
        pytest.fail(f"{fixture} {missing}")
