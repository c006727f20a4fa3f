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
from typing import TYPE_CHECKING, Callable

from rocketmq_emulator.broker.cluster import BrokerState, Cluster, broker_names
from rocketmq_emulator.broker.config import PERM_READ, PERM_WRITE, BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.pulsar.entry_keys import pulsar_entry_keys
from rocketmq_emulator.broker.retry_lifecycle import DLQ_PREFIX, RETRY_PREFIX
from rocketmq_emulator.delay_scheduler import Clock, VirtualClock
from rocketmq_emulator.store.records import decode_record

from .admin import AdminOperations
from .message import MessageExt
from .producer import Producer
from .push_consumer import PushConsumer
from .runtime import ClientRuntime
from .transport.base import Connector
from .transport.in_process_cluster import InProcessCluster
from .transport.inprocess import InProcessBroker, InProcessTransport
from .transport.loopback import LoopbackBroker

if TYPE_CHECKING:       # (the dead-letter views and the fault rules are loaded when first asked for)
    from rocketmq_emulator.broker.facade.across import DeadLetter, RedriveResult

    from .faults import Faults

__all__ = ["EmbeddedBroker"]

_HUBS = {"inprocess": InProcessBroker, "loopback": LoopbackBroker}

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"


class EmbeddedBroker(AdminOperations, Connector):
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

    ``brokers=N`` (default 1): a cluster of broker-a, broker-b, ... behind one name
    server on one clock (``broker.cluster``); clients spread over them as over a real
    cluster. ``core`` is then broker-a's; the inspection helpers read every broker's
    store (or ``broker=NAME``'s), and ``set_writeable`` / ``stop_broker`` /
    ``start_broker`` / ``brokers()`` inject the faults of one broker. ``cores``: the
    ready cores of such a cluster (named broker-a, broker-b, ... on one clock).
    """

    def __init__(self, core: BrokerCore | None = None, *, clock: Clock | None = None,
                 config: BrokerConfig | None = None, seed: int = 0, pid: int | None = None,
                 strict: bool = True, skip_idle: bool = True, transport: str = "inprocess",
                 brokers: int = 1, cores: list[BrokerCore] | None = None, **broker_conf) -> None:
        hub_class = _HUBS.get(transport)
        if hub_class is None:
            raise ValueError(f"transport {transport!r} is not one of {', '.join(sorted(_HUBS))}")
        if cores is not None:           # ready cores of a cluster (on disk: the simulator's)
            if core is not None or broker_conf or config is not None or brokers != 1:
                raise TypeError("pass ready cores alone, without core, config or brokers")
            brokers = len(cores)
        elif core is None:
            if broker_conf:
                config = BrokerConfig.from_properties({k: _conf_str(v) for k, v in broker_conf.items()}, config)
            clock = clock or VirtualClock()
            cores = [BrokerCore.in_memory(clock=clock, config=_member_config(config, name, i, brokers),
                                          rng=random.Random(seed + i), entry_keys=pulsar_entry_keys())
                     for i, name in enumerate(broker_names(brokers))]
        elif broker_conf or config is not None:
            raise TypeError("pass either a ready core or a config, not both")
        elif brokers > 1:
            raise TypeError("a ready core is one broker: pass brokers=N without a core, or cores=[...]")
        else:
            cores = [core]
        self.core = cores[0]
        self.clock = self.core.clock
        self.runtime = ClientRuntime(self.clock, pid=pid)
        self.cluster = Cluster(cores) if brokers > 1 else None
        if self.cluster is not None:
            self.hub = InProcessCluster(self.cluster, self.runtime, hub_class=hub_class, skip_idle=skip_idle)
        else:
            self.hub = hub_class(self.core, self.runtime, skip_idle=skip_idle)
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
    def _cores(self, broker: str | None) -> list[BrokerCore]:
        """The cores an operation concerns: ``broker``'s, else every broker's."""
        if broker is not None:
            if self.cluster is None:
                if broker != self.core.config.broker_name:
                    raise ValueError(f"no broker named {broker!r}; the broker is {self.core.config.broker_name}")
                return [self.core]
            return [self.cluster.core(broker)]
        return [self.core] if self.cluster is None else [self.cluster.core(n) for n in self.cluster.names]

    def create_topic(self, topic: str, queues: int = 4, *, order: bool = False, perm: int = PERM_READ | PERM_WRITE,
                     broker: str | None = None, message_type: str | None = None):
        """UPDATE_AND_CREATE_TOPIC from Python, on every broker (or ``broker``);
        ``message_type``: a 5.x topic's (normal, fifo, delay, transaction)."""
        return [c.create_topic(topic, queues, perm, order=order, message_type=message_type)
                for c in self._cores(broker)][0]

    @property
    def broker_permission(self) -> int:
        """brokerPermission (broker-a's in a cluster): 6 read+write, 4 read-only, 2 write-only."""
        return self.core.config.broker_permission

    @broker_permission.setter
    def broker_permission(self, perm: int) -> None:
        self.core.set_broker_permission(perm)

    def set_writeable(self, writeable: bool, broker: str | None = None) -> None:
        """Switch a broker's write permission off (brokerPermission 4) or on (6): the
        broker's (broker-a's unless ``broker`` names another). Routes carry it at once."""
        for core in self._cores(broker or self.core.config.broker_name):
            perm = core.config.broker_permission
            core.set_broker_permission(perm | PERM_WRITE if writeable else perm & ~PERM_WRITE)

    def brokers(self) -> list[BrokerState]:
        """Every broker: name, address, up or stopped, brokerPermission, topics."""
        if self.cluster is not None:
            return self.cluster.states()
        c = self.core
        return [BrokerState(c.config.broker_name, c.addr, True, c.config.broker_permission, len(c.topic_names()))]

    def stop_broker(self, name: str) -> None:
        """Stop a broker of the cluster: out of every route, its client connections
        closed, requests to it refused until ``start_broker``. ClusterError (a
        ValueError) for an unknown name or the last broker serving a topic."""
        self._cluster_only("stop_broker").stop_broker(name)
        self.runtime.run_until_idle()

    def start_broker(self, name: str) -> None:
        self._cluster_only("start_broker").start_broker(name)
        self.runtime.run_until_idle()

    def dead_letters(self, group: str) -> list[DeadLetter]:
        """``group``'s dead letters on every broker (broker/rocketmq_model/dead_letters.py): id, keys,
        tags, original topic, attempts, when it died, and what it was re-driven as."""
        return [d for core in self._cores(None) for d in core.dead_letters(group)]

    def redrive(self, group: str, ids: list[str] | None = None, *, dry_run: bool = False) -> RedriveResult:
        """Send ``group``'s dead letters (``ids``, or every one) back to their topic as new
        messages, each once (the rule: broker/rocketmq_model/dead_letters.py). DeadLetterError (a
        ValueError) for an empty DLQ or an id that is not one of its dead letters."""
        from rocketmq_emulator.broker.facade.across import redrive
        result = redrive(self._cores(None), group, ids, dry_run=dry_run)
        self.runtime.run_until_idle()
        return result

    def _cluster_only(self, what: str) -> InProcessCluster:
        if self.cluster is None:
            raise ValueError(f"{what} needs a cluster: EmbeddedBroker(brokers=2) (a lone broker has nowhere to send "
                             f"its clients)")
        return self.hub

    def inject_fault(self, code: int, *, times: int | None = None, error=None):
        """Fail requests with ``code`` in transit (see InProcessBroker.inject_fault);
        returns a function that removes the fault."""
        kwargs = {} if error is None else {"error": error}
        return self.hub.inject_fault(code, times=times, **kwargs)

    @property
    def faults(self) -> "Faults":
        """Fault rules on the broker(s): ``faults.add("send", "refuse", times=1)`` and
        friends (client_sdk/faults.py, broker/faults/rules.py)."""
        from .faults import Faults

        return Faults(lambda: self._cores(None))

    @property
    def events(self):
        """The core's EventLog (stored, delayed, redelivered, sent_back, dead_lettered, ...)."""
        return self.core.event_log()

    # -- inspection -------------------------------------------------------------------------------
    def messages(self, topic: str, queue_id: int | None = None, *, broker: str | None = None) -> list[MessageExt]:
        """Every message stored in ``topic`` (all queues, or one), in queue order, broker
        by broker (every broker's, or ``broker``'s)."""
        out = []
        for core in self._cores(broker):
            qids = [queue_id] if queue_id is not None else sorted(core.stored_queues().get(topic, []))
            for qid in qids:
                out += [MessageExt.adopt(decode_record(raw, check_crc=False)) for raw in core.queue_records(topic, qid)]
        return out

    def broker_of(self, message: MessageExt) -> str:
        """The name of the broker that stored ``message`` (by its store host)."""
        for core in self._cores(None):
            if tuple(message.store_host) == tuple(core.store_host):
                return core.config.broker_name
        raise ValueError(f"no broker here stored {message!r}")

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

    def committed_offset(self, group: str, topic: str, queue_id: int = 0, *, broker: str | None = None) -> int:
        """The offset the broker (broker-a, or ``broker``) holds for (group, topic, queue); −1 if none."""
        return self._cores(broker or self.core.config.broker_name)[0].stored_offset(group, topic, queue_id)

    def committed_offsets(self, group: str, topic: str, *, broker: str | None = None) -> dict[int, int]:
        """{queue id: committed offset} for every queue of ``topic`` that has one (broker-a's, or ``broker``'s)."""
        return self._cores(broker or self.core.config.broker_name)[0].group_offsets(group, topic)

    def max_offset(self, topic: str, queue_id: int = 0, *, broker: str | None = None) -> int:
        return self._cores(broker or self.core.config.broker_name)[0].queue_bounds(topic, queue_id)[1]

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
        for core in self._cores(None):
            core.close()

    def __enter__(self) -> "EmbeddedBroker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"EmbeddedBroker({self.core.addr}, now={self.clock.now_ms()})"


def _member_config(config: BrokerConfig | None, name: str, index: int, brokers: int) -> BrokerConfig | None:
    """A cluster member's config: its name and a port of its own (10911, 10912, ...), so
    routes and offsetMsgIds tell the brokers apart."""
    if brokers == 1:
        return config
    base = config or BrokerConfig()
    return base.replace(broker_name=name, listen_port=base.listen_port + index)


def _conf_str(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
