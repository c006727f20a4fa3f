"""MQTT bridge (aiomqtt — asyncio-mqtt's current name): devices publish into topics, the
retry / DLQ lifecycle streams out, chosen topics are forwarded out.

It translates and decides nothing: ingress becomes an ordinary send of the core (same
validation as any producer), the event feed is the core's event record, egress is an
ordinary clustering consumer (registered, pulling and committing through the core's
typed operations) whose failed publish is sent back and so takes the %RETRY% / %DLQ%
path. Egress reads the store
when the core says a message arrived in a forwarded topic (its STORED / REDELIVERED
events), never by polling.

Ingress QoS 1 publishes are acknowledged (PUBACK) only after the message is stored and
the store flushed: paho's manual-ack mode, reached through aiomqtt's wrapped client
because aiomqtt 2.5 has no public manual-ack API. A lost MQTT connection is retried
with exponential backoff while the rest of the broker keeps serving.
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from ...core import BrokerCore
from ...events import Event, EventKind
from ...rocketmq_model.groups import SubscriptionData
from ...operations import (ConsumerRegistration, PullRequest, Registration, SendBack, SendBackOutcome, SendOutcome,
                          SendRequest)
from ...rocketmq_model.topics import RETRY_PREFIX, TopicNameError, validate_topic_name

__all__ = ["MqttSettings", "MqttBridge", "PubackWatcher", "parse_mqtt_url"]

log = logging.getLogger("broker.mqtt")
EVENT_KINDS = (EventKind.SENT_BACK, EventKind.DEAD_LETTERED, EventKind.REDELIVERED)
# What puts a message where egress reads: a store, or a re-store when a delay ends.
ARRIVAL_KINDS = (EventKind.STORED, EventKind.REDELIVERED)
# A message whose forward failed and whose send-back was refused too is tried again
# after this long (real time), there being nothing else to wake egress for it.
EGRESS_RETRY_S = 1.0
BRIDGE_PRODUCER_GROUP = "MQTT_BRIDGE_PRODUCER"
BRIDGE_CONSUMER_GROUP = "MQTT_BRIDGE_EGRESS"


@dataclass(slots=True)
class MqttSettings:
    host: str = "127.0.0.1"
    port: int = 1883
    username: str | None = None
    password: str | None = None
    client_id: str = "rocketmq-emulator"
    topic_prefix: str = "rocketmq"
    events_prefix: str = "rocketmq-events"
    out_prefix: str = "rocketmq-out"
    egress_topics: list[str] = field(default_factory=list)
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 5.0
    max_pending_events: int = 100_000


def parse_mqtt_url(url: str, **overrides) -> MqttSettings:
    """``mqtt://[user[:password]@]HOST[:PORT]`` → settings (port 1883 by default)."""
    parsed = urlparse(url)
    if parsed.scheme != "mqtt" or not parsed.hostname:
        raise ValueError(f"--mqtt must look like mqtt://HOST:PORT, got {url!r}")
    try:
        port = parsed.port or 1883
    except ValueError:
        raise ValueError(f"--mqtt has a bad port: {url!r}") from None
    s = MqttSettings(host=parsed.hostname, port=port,
                     username=unquote(parsed.username) if parsed.username else None,
                     password=unquote(parsed.password) if parsed.password else None)
    for k, v in overrides.items():
        if v is not None:
            setattr(s, k, v)
    return s


@dataclass(slots=True)
class BridgeStats:
    ingress_stored: int = 0
    ingress_dropped: int = 0
    events_published: int = 0
    egress_published: int = 0
    egress_failed: int = 0
    connects: int = 0


class MqttBridge:
    def __init__(self, core: BrokerCore, settings: MqttSettings, after_activity=lambda: None) -> None:
        self.core = core
        self.settings = settings
        self.after_activity = after_activity
        self.stats = BridgeStats()
        self.channel = core.connect("127.0.0.1:0")
        self.channel.client_id = f"mqtt-bridge@{settings.client_id}"
        self._events: deque[Event] = deque(maxlen=settings.max_pending_events)
        self._events_ready = asyncio.Event()
        self._client = None
        self.connected = asyncio.Event()
        self._unsubscribe = core.subscribe_events(self._on_event, kinds=EVENT_KINDS)
        self._task: asyncio.Task | None = None
        # Egress is woken by the core when a message is stored in a forwarded topic (or
        # re-stored there when its delay ends), not by polling the store.
        self._egress_ready = asyncio.Event()
        self._egress_topics = frozenset(settings.egress_topics) | {RETRY_PREFIX + BRIDGE_CONSUMER_GROUP}
        self._unsubscribe_egress = lambda: None
        if settings.egress_topics:
            self._register_egress_consumer()
            self._unsubscribe_egress = core.subscribe_events(self._on_arrival, kinds=ARRIVAL_KINDS)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> asyncio.Task:
        """Run the bridge; the task ends only by stop() or by a failure that is not a
        lost connection (a bug, a missing module): whoever started it watches it."""
        self._task = asyncio.create_task(self._run(), name="MQTT bridge")
        return self._task

    async def stop(self) -> None:
        self._unsubscribe()
        self._unsubscribe_egress()
        task = self._task
        if task is None or task.done():
            return                      # a failure has been reported by the task's watcher
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("MQTT bridge failed while stopping")

    async def _run(self) -> None:
        import aiomqtt

        delay = self.settings.backoff_initial_s
        while True:
            try:
                client = aiomqtt.Client(
                    self.settings.host, self.settings.port, username=self.settings.username,
                    password=self.settings.password, identifier=self.settings.client_id,
                    protocol=aiomqtt.ProtocolVersion.V5, max_inflight_messages=100,
                    # persistent session: QoS 1 publishes not yet acknowledged are redelivered
                    clean_start=False, properties=_session_properties())
                client.pending_calls_threshold = 1_000_000
                client._client.manual_ack_set(True)  # PUBACK only once stored (see module doc)
                async with client:
                    self._client = client
                    self.stats.connects += 1
                    self.connected.set()
                    delay = self.settings.backoff_initial_s
                    log.info("MQTT bridge connected to %s:%s", self.settings.host, self.settings.port)
                    await client.subscribe(f"{self.settings.topic_prefix}/#", qos=1)
                    async with asyncio.TaskGroup() as tg:
                        tg.create_task(self._ingress(client))
                        tg.create_task(self._publish_events(client))
                        if self.settings.egress_topics:
                            tg.create_task(self._egress(client))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # also inside the TaskGroup (an ExceptionGroup)
                if not _lost_connection(exc, aiomqtt.MqttError):
                    raise               # a bug, not the network: retrying would hide it
                log.warning("MQTT bridge disconnected (%s); retrying in %.1fs", _describe(exc), delay)
            finally:
                self._client = None
                self.connected.clear()
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.settings.backoff_max_s)

    # -- ingress -----------------------------------------------------------------------------
    async def _ingress(self, client) -> None:
        queue = client._queue
        async for first in client.messages:
            batch = [first]
            while not queue.empty() and len(batch) < 512:
                batch.append(queue.get_nowait())
            to_ack = [m for m in batch if self._store(m) and m.qos > 0]
            if any(m.qos > 0 for m in batch):
                self.core.flush_log()     # durable before the broker is told it may forget it
            for m in batch:
                if m.qos > 0:
                    client._client.ack(m.mid, m.qos)
            self.after_activity()
            del to_ack

    def _store(self, message) -> bool:
        """Store one MQTT publish as a message; False (logged, counted) when dropped."""
        topic_path = str(message.topic)
        prefix = self.settings.topic_prefix + "/"
        parts = topic_path[len(prefix):].split("/") if topic_path.startswith(prefix) else []
        if not parts or len(parts) > 2 or not parts[0]:
            return self._drop(topic_path, "expected <prefix>/<topic>[/<tag>]")
        topic, tag = parts[0], (parts[1] if len(parts) == 2 else None)
        try:
            validate_topic_name(topic)
        except TopicNameError as exc:
            return self._drop(topic_path, str(exc))
        payload = message.payload if isinstance(message.payload, (bytes, bytearray)) else str(message.payload or "").encode()
        if len(payload) > self.core.config.max_message_size:
            return self._drop(topic_path, f"payload of {len(payload)} bytes is over maxMessageSize")
        props = {}
        for k, v in _user_properties(message):
            props["KEYS" if k == "keys" else k] = v
        if tag:
            props["TAGS"] = tag
        from rocketmq_emulator.store.records import properties_to_string

        try:
            text = properties_to_string(props)
        except Exception:
            return self._drop(topic_path, "unusable user properties")
        del text
        result = self.core.send(SendRequest(BRIDGE_PRODUCER_GROUP, topic, bytes(payload), -1, props,
                                            born_timestamp=self.core.clock.now_ms()), self.channel)
        if result.outcome is not SendOutcome.STORED:
            return self._drop(topic_path, f"refused by the broker: {result.remark or result.outcome.value}")
        self.stats.ingress_stored += 1
        return True

    def _drop(self, topic_path: str, why: str) -> bool:
        self.stats.ingress_dropped += 1
        log.warning("MQTT ingress dropped publish on %r: %s", topic_path, why)
        return False

    # -- event feed --------------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        self._events.append(event)
        self._events_ready.set()

    async def _publish_events(self, client) -> None:
        while True:
            await self._events_ready.wait()
            self._events_ready.clear()
            while self._events:
                event = self._events[0]
                group = event.group or _group_of(event.topic)
                await client.publish(f"{self.settings.events_prefix}/{group}/{event.kind}",
                                     json.dumps(event.to_json(), sort_keys=True), qos=1)
                self._events.popleft()   # only once the MQTT broker has it
                self.stats.events_published += 1

    # -- egress ------------------------------------------------------------------------------
    def _on_arrival(self, event: Event) -> None:
        if event.topic in self._egress_topics:
            self._egress_ready.set()

    def _register_egress_consumer(self) -> None:
        topics = [*self.settings.egress_topics, RETRY_PREFIX + BRIDGE_CONSUMER_GROUP]
        subs = tuple(SubscriptionData(t, "*", sub_version=1) for t in topics)
        self.core.register(Registration(self.channel.client_id, (ConsumerRegistration(
            BRIDGE_CONSUMER_GROUP, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_FIRST_OFFSET", subs),)),
            self.channel)

    async def _egress(self, client) -> None:
        from rocketmq_emulator.store.records import Prop, iter_records

        pubacks = PubackWatcher(client)
        topics = list(self.settings.egress_topics) + [RETRY_PREFIX + BRIDGE_CONSUMER_GROUP]
        while True:
            self._egress_ready.clear()          # (before the scan: an arrival during it wakes the next)
            moved = stuck = False
            for topic in topics:
                tc = self.core.topic_config(topic)
                for qid in range(tc.read_queue_nums if tc else 0):
                    offset = max(self.core.committed_offset(BRIDGE_CONSUMER_GROUP, topic, qid) or 0, 0)
                    res = self.core.pull(PullRequest(BRIDGE_CONSUMER_GROUP, topic, qid, offset, 32), self.channel)
                    records = [rec for raw in res.records for rec in iter_records(raw)]
                    for rec in records:
                        out_topic = rec.properties.get(Prop.RETRY_TOPIC, topic) if topic.startswith(RETRY_PREFIX) else topic
                        try:
                            refusal = await pubacks.publish(f"{self.settings.out_prefix}/{out_topic}", rec.body)
                        except Exception:
                            # The connection went away mid-publish: a failed consumption too.
                            # Send it back, then let _run reconnect.
                            self.stats.egress_failed += 1
                            if self._send_back(rec):
                                self.core.record_offset_commit(BRIDGE_CONSUMER_GROUP, topic, qid, rec.queue_offset + 1)
                            raise
                        if refusal is None:
                            self.stats.egress_published += 1
                        else:
                            self.stats.egress_failed += 1
                            log.warning("egress publish of %s to %s/%s refused by the MQTT broker (%s); sent back",
                                        rec.msg_id, self.settings.out_prefix, out_topic, refusal)
                            if not self._send_back(rec):
                                stuck = True
                                break   # offset stays put: this message is tried again next round
                        self.core.record_offset_commit(BRIDGE_CONSUMER_GROUP, topic, qid, rec.queue_offset + 1)
                        moved = True
            self.after_activity()
            if moved:
                continue
            if stuck:       # nothing new may arrive for it: try again after a while
                try:
                    await asyncio.wait_for(self._egress_ready.wait(), EGRESS_RETRY_S)
                except TimeoutError:
                    pass
            else:
                await self._egress_ready.wait()

    def _send_back(self, rec) -> bool:
        """CONSUMER_SEND_MSG_BACK for a message the bridge failed to forward; False if refused."""
        result = self.core.send_back(SendBack(BRIDGE_CONSUMER_GROUP, rec.commit_log_offset, 0,
                                              origin_msg_id=rec.msg_id, origin_topic=rec.topic))
        if result.outcome not in (SendBackOutcome.RETRYING, SendBackOutcome.DEAD_LETTERED):
            log.error("egress send-back of %s failed: %s", rec.msg_id, result.remark or result.outcome.value)
            return False
        return True


class PubackWatcher:
    """QoS 1 publish that reports the PUBACK reason code.

    aiomqtt 2.5 completes ``publish`` on any PUBACK and drops its reason code, so a
    publish the MQTT broker refused (MQTT 5: 0x87 Not authorized, 0x97 Quota exceeded,
    ...) would look delivered. Egress publishes through paho directly and chains
    aiomqtt's own on_publish, which keeps completing aiomqtt's publishes (the event feed).
    """

    def __init__(self, client, timeout_s: float = 10.0) -> None:
        self._paho = client._client
        self._timeout_s = timeout_s
        self._waiting: dict[int, asyncio.Future] = {}
        self._chained = self._paho.on_publish
        self._paho.on_publish = self._on_publish

    def _on_publish(self, paho, userdata, mid, reason_code, properties) -> None:
        fut = self._waiting.pop(mid, None)
        if fut is not None and not fut.done():
            fut.set_result(reason_code)
        self._chained(paho, userdata, mid, reason_code, properties)

    async def publish(self, topic: str, payload: bytes) -> str | None:
        """None once the MQTT broker accepted it; the reason as text when it refused it.
        Raises when the publish could not be sent or no PUBACK came in time."""
        import paho.mqtt.client as mqtt

        info = self._paho.publish(topic, payload, qos=1)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            raise ConnectionError(f"MQTT publish not sent: {mqtt.error_string(info.rc)}")
        # paho reads PUBACKs from a loop callback, never inside publish(): registering
        # the future right after publish() returns cannot miss it.
        fut = asyncio.get_running_loop().create_future()
        self._waiting[info.mid] = fut
        try:
            reason = await asyncio.wait_for(fut, self._timeout_s)
        finally:
            self._waiting.pop(info.mid, None)
        return f"{reason} (0x{reason.value:02x})" if reason.is_failure else None


def _session_properties():
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    props = Properties(PacketTypes.CONNECT)
    props.SessionExpiryInterval = 3600
    return props


def _user_properties(message) -> list[tuple[str, str]]:
    props = getattr(message, "properties", None)
    return list(getattr(props, "UserProperty", None) or [])


def _group_of(topic: str) -> str:
    return topic[len(RETRY_PREFIX):] if topic.startswith(RETRY_PREFIX) else "_"


def _lost_connection(exc: BaseException, mqtt_error: type) -> bool:
    """True when ``exc`` (every exception of a group) is the MQTT connection failing:
    aiomqtt's errors, socket errors and timeouts (OSError covers both)."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_lost_connection(e, mqtt_error) for e in exc.exceptions)
    return isinstance(exc, (mqtt_error, OSError))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"
