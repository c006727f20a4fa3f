"""EmbeddedBroker: a broker core, its clock and the client loop in one object — what
tests and the pytest plugin use.

    broker = EmbeddedBroker()                       # VirtualClock, in-memory store
    producer = broker.producer("pg")                # started, connected in-process
    consumer = broker.push_consumer("cg", "Orders", listener=fn)
    producer.send(Message("Orders", b"hi"))
    broker.advance("10s")                           # time travel: deliver what is due
    broker.dlq_messages("cg"), broker.committed_offset("cg", "Orders", 0)

The inspection helpers read the store directly (they are the test's eyes, not a
client): ``messages(topic)``, ``retry_messages(group)``, ``dlq_messages(group)``,
``committed_offsets(group, topic)``.
"""
from __future__ import annotations

import random
from typing import Callable

from rocketmq_emulator.broker.config import PERM_READ, PERM_WRITE, BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.delay_scheduler import Clock, VirtualClock
from rocketmq_emulator.store.records import decode_record

from .message import MessageExt
from .producer import Producer
from .push_consumer import PushConsumer
from .runtime import ClientRuntime
from .transport.base import Connector
from .transport.inprocess import InProcessBroker, InProcessTransport
from .transport.loopback import LoopbackBroker

__all__ = ["EmbeddedBroker"]

_HUBS = {"inprocess": InProcessBroker, "loopback": LoopbackBroker}

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"


class EmbeddedBroker(Connector):
    """A broker in this process with the SDK's loop around it.

    ``config`` is a BrokerConfig, or keyword overrides in RocketMQ's broker.conf names
    (``autoCreateTopicEnable=False``, ``messageDelayLevel="1s 2s"``, ...). ``strict``
    (default True) is passed to consumers made here: a listener returning a non-status
    raises ListenerResultError from ``advance`` / ``run_until_idle``. ``skip_idle``
    (default True): ``advance`` carries settled periodic client work forward instead of
    running each request (``transport.idle_skip``; same results, far less wall time).
    ``transport``: ``"inprocess"`` (default: commands are handed to the core as objects)
    or ``"loopback"`` (every command is encoded into a frame and decoded again, as over
    TCP; ``transport.loopback``).
    """

    def __init__(self, core: BrokerCore | None = None, *, clock: Clock | None = None,
                 config: BrokerConfig | None = None, seed: int = 0, pid: int | None = None,
                 strict: bool = True, skip_idle: bool = True, transport: str = "inprocess",
                 **broker_conf) -> None:
        hub_class = _HUBS.get(transport)
        if hub_class is None:
            raise ValueError(f"transport {transport!r} is not one of {', '.join(sorted(_HUBS))}")
        if core is None:
            if broker_conf:
                config = BrokerConfig.from_properties({k: _conf_str(v) for k, v in broker_conf.items()}, config)
            core = BrokerCore.in_memory(clock=clock or VirtualClock(), config=config, rng=random.Random(seed))
        elif broker_conf or config is not None:
            raise TypeError("pass either a ready core or a config, not both")
        self.core = core
        self.clock = core.clock
        self.runtime = ClientRuntime(core.clock, pid=pid)
        self.hub = hub_class(core, self.runtime, skip_idle=skip_idle)
        self.strict = strict
        self._clients: list = []

    # -- connecting clients ------------------------------------------------------------------
    def connect(self) -> InProcessTransport:
        return self.hub.connect()

    def producer(self, group: str = "test_producer_group", **options) -> Producer:
        """A started Producer connected to this broker."""
        p = Producer(group, self, **options)
        p.start()
        self._clients.append(p)
        return p

    def push_consumer(self, group: str, topic: str | None = None, expression: str = "*", *,
                      listener: Callable | None = None, orderly: bool | None = None,
                      subscriptions: dict[str, str] | None = None, start: bool = True,
                      **options) -> PushConsumer:
        """A PushConsumer subscribed to ``topic`` (and/or ``subscriptions``
        {topic: expression}) with ``listener``; started unless ``start=False``."""
        options.setdefault("strict", self.strict)
        c = PushConsumer(group, self, **options)
        if topic is not None:
            c.subscribe(topic, expression)
        for t, e in (subscriptions or {}).items():
            c.subscribe(t, e)
        if listener is not None:
            c.register_message_listener(listener, orderly=orderly)
        self._clients.append(c)
        if start:
            c.start()
            self.runtime.run_until_idle()
        return c

    # -- time ------------------------------------------------------------------------------------
    def advance(self, duration: int | str) -> int:
        """Time travel: move the clock by ``duration`` ("10s", "2h", "1h30m", or ms),
        delivering everything due on the way. Returns the new time (ms)."""
        return self.runtime.advance(duration)

    def run_until_idle(self) -> None:
        """Run pulls, listeners and results until nothing more happens without time moving."""
        self.runtime.run_until_idle()

    def run_until(self, predicate: Callable[[], bool], timeout: int | str = "1h") -> bool:
        """Advance (virtual) time until ``predicate()`` holds or ``timeout`` passes."""
        return self.runtime.run_until(predicate, timeout)

    @property
    def now_ms(self) -> int:
        return self.clock.now_ms()

    # -- broker administration --------------------------------------------------------------------
    def create_topic(self, topic: str, queues: int = 4, *, order: bool = False, perm: int = PERM_READ | PERM_WRITE):
        """UPDATE_AND_CREATE_TOPIC from Python."""
        return self.core.create_topic(topic, queues, perm, order=order)

    @property
    def broker_permission(self) -> int:
        """brokerPermission: 6 read+write, 4 read-only, 2 write-only."""
        return self.core.config.broker_permission

    @broker_permission.setter
    def broker_permission(self, perm: int) -> None:
        self.core.set_broker_permission(perm)

    def set_writeable(self, writeable: bool) -> None:
        """Switch the broker's write permission off (brokerPermission 4) or on (6)."""
        perm = self.broker_permission
        self.core.set_broker_permission(perm | PERM_WRITE if writeable else perm & ~PERM_WRITE)

    def inject_fault(self, code: int, *, times: int | None = None, error=None):
        """Fail requests with ``code`` in transit (see InProcessBroker.inject_fault);
        returns a function that removes the fault."""
        kwargs = {} if error is None else {"error": error}
        return self.hub.inject_fault(code, times=times, **kwargs)

    @property
    def events(self):
        """The core's EventLog (stored, delayed, redelivered, sent_back, dead_lettered, ...)."""
        return self.core.events

    # -- inspection -------------------------------------------------------------------------------
    def messages(self, topic: str, queue_id: int | None = None) -> list[MessageExt]:
        """Every message stored in ``topic`` (all queues, or one), in queue order."""
        store = self.core.store
        qids = [queue_id] if queue_id is not None else sorted(store.queues().get(topic, []))
        out = []
        for qid in qids:
            for off in range(store.min_offset(topic, qid), store.max_offset(topic, qid)):
                entry = store.queue_entry(topic, qid, off)
                if entry is None:
                    continue
                raw = store.read(entry[0])
                if raw is not None:
                    out.append(MessageExt.adopt(decode_record(raw, check_crc=False)))
        return out

    def retry_messages(self, group: str) -> list[MessageExt]:
        """Messages that reached ``%RETRY%<group>`` (delivered retries; pending ones wait
        in SCHEDULE_TOPIC_XXXX — see ``scheduled_messages``)."""
        return self.messages(RETRY_PREFIX + group)

    def dlq_messages(self, group: str) -> list[MessageExt]:
        """Messages dead-lettered into ``%DLQ%<group>``."""
        return self.messages(DLQ_PREFIX + group)

    def scheduled_messages(self, real_topic: str | None = None) -> list[MessageExt]:
        """Messages waiting for a delay level (retries on their way), optionally only
        those bound for ``real_topic`` (e.g. ``%RETRY%<group>``)."""
        msgs = self.messages(SCHEDULE_TOPIC)
        if real_topic is not None:
            msgs = [m for m in msgs if m.properties.get("REAL_TOPIC") == real_topic]
        return msgs

    def committed_offset(self, group: str, topic: str, queue_id: int = 0) -> int:
        """The offset the broker holds for (group, topic, queue); −1 if none."""
        return self.core.store.query_offset(group, topic, queue_id)

    def committed_offsets(self, group: str, topic: str) -> dict[int, int]:
        """{queue id: committed offset} for every queue of ``topic`` that has one."""
        return {int(q): o for q, o in self.core.store.offset_table().get(f"{topic}@{group}", {}).items()}

    def max_offset(self, topic: str, queue_id: int = 0) -> int:
        return self.core.store.max_offset(topic, queue_id)

    # -- lifecycle ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Shut down every client made here, then the broker."""
        for c in reversed(self._clients):
            try:
                c.shutdown()
            except Exception:  # closing must go on
                pass
        self._clients.clear()
        self.hub.close()
        self.core.close()

    def __enter__(self) -> "EmbeddedBroker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"EmbeddedBroker({self.core.addr}, now={self.clock.now_ms()})"


def _conf_str(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
