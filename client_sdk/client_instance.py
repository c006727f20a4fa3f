"""One client's connection and shared machinery (RocketMQ's MQClientInstance).

Holds the transport and ``BrokerAPI``, the client id (``ip@instanceName``), the route
cache, and the periodic jobs every client needs: heartbeat every 30 s
(heartbeatBrokerInterval), route refresh every 30 s (pollNameServerInterval), consumer
offset persistence every 5 s (persistConsumerOffsetInterval) and rebalance every 20 s.
It answers the broker's NOTIFY_CONSUMER_IDS_CHANGED by rebalancing at once, and its
CHECK_TRANSACTION_STATE with the producer of the message's group (client_sdk/transaction.py).
A consumer's inner producer (group CLIENT_INNER_PRODUCER) shares its consumer's instance.
"""
from __future__ import annotations

import functools
import logging

from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode
from rocketmq_emulator.broker.notifications import ConsumerIdsChanged

from .api import BrokerAPI
from .errors import MQClientError, RemotingError
from .route import TopicRoute
from .roles import ConsumerRole, ProducerRole
from .runtime import Timer
from .transport.base import Connector, Transport


__all__ = ["ClientInstance", "resolve_transport"]

log = logging.getLogger("client_sdk")


def resolve_transport(broker) -> Transport:
    """A Transport from what the user passed: a Connector (EmbeddedBroker,
    InProcessBroker, ...) or a ready Transport."""
    if isinstance(broker, Transport):
        return broker
    connect = getattr(broker, "connect", None)
    if isinstance(broker, Connector) or callable(connect):
        return connect()
    raise MQClientError(f"cannot connect to {broker!r}: pass an EmbeddedBroker, an InProcessBroker, "
                        f"a RemoteBroker or a Transport (or namesrv_addr='host:port')")


class ClientInstance:
    """Connection, identity, routes and periodic jobs of one client."""

    def __init__(self, broker, *, instance_name: str | None = None, client_ip: str | None = None,
                 heartbeat_interval_ms: int = 30000, poll_name_server_interval_ms: int = 30000,
                 persist_offset_interval_ms: int = 5000, rebalance_interval_ms: int = 20000) -> None:
        self.transport = resolve_transport(broker)
        self.runtime = self.transport.runtime
        self.api = BrokerAPI(self.transport)
        self.client_ip = client_ip or self.runtime.ip
        self.instance_name = instance_name or self.runtime.new_instance_name()
        self.client_id = f"{self.client_ip}@{self.instance_name}"
        self.routes: dict[str, TopicRoute | None] = {}
        self.producers: dict[str, ProducerRole] = {}
        self.consumers: dict[str, ConsumerRole] = {}
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.poll_name_server_interval_ms = poll_name_server_interval_ms
        self.persist_offset_interval_ms = persist_offset_interval_ms
        self.rebalance_interval_ms = rebalance_interval_ms
        self._timers: list[Timer] = []
        self._started = False
        self._closed = False
        self.transport.on_request(self._on_broker_request)

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        if self._started:
            return
        self._started = True
        rt = self.runtime
        # First delays as MQClientInstance.startScheduledTask: routes 10 ms, heartbeat 1 s,
        # offsets 10 s; the RebalanceService waits 20 s between rounds.
        self._timers = [
            rt.call_every(self.heartbeat_interval_ms, self._guard, self.send_heartbeat, first_delay_ms=1000,
                          quiet=("heartbeat", self)),
            rt.call_every(self.poll_name_server_interval_ms, self._guard, self.refresh_routes, first_delay_ms=10,
                          quiet=("routes", self)),
            rt.call_every(self.persist_offset_interval_ms, self._guard, self.persist_all_offsets,
                          first_delay_ms=10000, quiet=("offsets", self)),
            rt.call_every(self.rebalance_interval_ms, self._guard, self.rebalance_all, quiet=("rebalance", self)),
        ]
        rt.clients.append(self)

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        for t in self._timers:
            t.cancel()
        if self in self.runtime.clients:
            self.runtime.clients.remove(self)
        self.transport.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def _guard(self, fn) -> None:
        """Periodic jobs log failures (a broker that is down) instead of failing the loop."""
        if self._closed:
            return
        try:
            fn()
        except (MQClientError, RemotingError) as exc:
            log.warning("%s: %s failed: %s", self.client_id, getattr(fn, "__name__", fn), exc)

    # -- registry ------------------------------------------------------------------------
    def register_producer(self, group: str, producer: ProducerRole) -> None:
        if group in self.producers:
            raise MQClientError(f"the producer group[{group}] has been created before, specify another name please")
        self.producers[group] = producer

    def register_consumer(self, group: str, consumer: ConsumerRole) -> None:
        if group in self.consumers:
            raise MQClientError(f"the consumer group[{group}] has been created before, specify another name please")
        self.consumers[group] = consumer

    def unregister(self, producer_group: str | None = None, consumer_group: str | None = None) -> None:
        if producer_group:
            self.producers.pop(producer_group, None)
        if consumer_group:
            self.consumers.pop(consumer_group, None)
        if not self._closed and not self.transport.closed:
            try:
                self.api.unregister_client(self.client_id, producer_group, consumer_group)
            except (MQClientError, RemotingError) as exc:
                log.warning("unregister of %s failed: %s", self.client_id, exc)

    # -- routes --------------------------------------------------------------------------
    def get_route(self, topic: str, refresh: bool = False) -> TopicRoute | None:
        if refresh or topic not in self.routes:
            self.routes[topic] = self.api.get_topic_route(topic)
        return self.routes[topic]

    def refresh_routes(self) -> None:
        topics = set(self.routes)
        for c in self.consumers.values():
            topics.update(c.subscriptions)
        for topic in sorted(topics):
            try:
                self.routes[topic] = self.api.get_topic_route(topic)
            except (MQClientError, RemotingError) as exc:
                log.warning("route refresh of %s failed: %s", topic, exc)

    # -- heartbeat -------------------------------------------------------------------------
    def heartbeat_data(self) -> dict:
        """HeartbeatData (rocketmq-4x.md §2.7)."""
        producers = [{"groupName": g} for g in sorted(self.producers)]
        return {"clientID": self.client_id,
                "producerDataSet": producers,
                "consumerDataSet": [c.consumer_data() for _, c in sorted(self.consumers.items())]}

    def send_heartbeat(self) -> None:
        if self._closed:
            return
        self.api.heartbeat(self.heartbeat_data())

    # -- consumers' periodic work -------------------------------------------------------------
    def persist_all_offsets(self) -> None:
        for c in list(self.consumers.values()):
            c.persist_offsets()

    def rebalance_all(self) -> None:
        for c in list(self.consumers.values()):
            c.do_rebalance()

    def _on_broker_request(self, cmd):
        if cmd.__class__ is ConsumerIdsChanged:        # in process: the core's notification as it is
            log.debug("%s: consumer ids of %s changed; rebalancing", self.client_id, cmd.group)
            self._guard(self.rebalance_all)
        elif cmd.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            group = cmd.header("consumerGroup")
            log.debug("%s: consumer ids of %s changed; rebalancing", self.client_id, group)
            self._guard(self.rebalance_all)   # rebalanceImmediately: every consumer of the instance
        elif cmd.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET:
            consumer = self.consumers.get(cmd.header("group") or "")
            if consumer is not None:
                offsets = _reset_offset_table(cmd.body)
                log.info("%s: offsets of %s reset by the broker: %d queue(s)", self.client_id, consumer.group,
                         len(offsets))
                self._guard(functools.partial(consumer.reset_offsets, offsets))
        elif cmd.code == RequestCode.CHECK_TRANSACTION_STATE:
            from .transaction import decode_checked_message

            msg = decode_checked_message(cmd.body)
            producer = self.producers.get(msg.get_property("PGROUP") or "") if msg is not None else None
            if producer is None:
                if msg is not None:
                    log.warning("%s: a check of transaction %s of group %s, which no producer here runs; ignored",
                                self.client_id, msg.msg_id, msg.get_property("PGROUP"))
                return None
            self._guard(functools.partial(producer.check_transaction_state, cmd, msg))
        return None


def _reset_offset_table(body: bytes) -> dict:
    """ResetOffsetBody's offsetTable → {MessageQueue: offset}."""
    from rocketmq_emulator.broker.fronts.remoting.protocol.fastjson import queue_table

    from .message import MessageQueue

    return {MessageQueue(*mq): int(offset) for mq, offset in queue_table(body)}
