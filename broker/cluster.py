"""Several brokers behind one name server, in one process, on one clock (sans-I/O).

A ``Cluster`` holds broker cores named broker-a, broker-b, ... and answers what a 4.x
name server answers for them: every topic's route lists the queues of each broker that
is up and has the topic, each with the topic's perm ANDed with its broker's
brokerPermission (as a broker re-registers after ``updateBrokerConfig brokerPermission``:
a write-off broker's queues are read-only in every route, so producers stop picking
them), and the broker list. A single core is its own name server (``BrokerCore.names``
is the core); a cluster sets ``names`` of each member to itself, so the name-server
requests any member receives see the whole cluster.

Stopping a broker takes it out of every route (its clients' next route refresh moves
them away); starting it again puts back the core the driver hands in (reopened from
its store). Moving a virtual clock ticks every member at each deadline on the way, in
time order, so a delayed message on broker-b comes due exactly as one on broker-a.
Nothing here does I/O: drivers (``serve``, the SDK's in-process hub) own listeners.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .config import PERM_READ, PERM_WRITE
from .errors import ClockError
from .operations import BrokerRoute, QueueRoute, TopicRoute
from .retry_lifecycle import DLQ_PREFIX, RETRY_PREFIX
from .rocketmq_model.topics import is_system_topic

__all__ = ["Cluster", "BrokerState", "ClusterError", "broker_names", "advance_together", "live_members", "next_due_ms",
           "MAX_BROKERS"]

MAX_BROKERS = 26                # broker-a .. broker-z


class ClusterError(ValueError):
    """A request the cluster refuses (unknown broker, stopping the last one serving a
    topic, ...): the message says why in one line."""


def broker_names(n: int) -> list[str]:
    if not 1 <= n <= MAX_BROKERS:
        raise ClusterError(f"a cluster has 1 to {MAX_BROKERS} brokers (broker-a .. broker-z), not {n}")
    return [f"broker-{chr(ord('a') + i)}" for i in range(n)]


@dataclass(frozen=True)
class BrokerState:
    """One broker as ``broker list`` shows it."""
    name: str
    address: str
    up: bool
    permission: int             # brokerPermission: 6 read+write, 4 read only, 2 write only
    topics: int

    @property
    def permission_text(self) -> str:
        return _perm_text(self.permission)


class Cluster:
    def __init__(self, cores) -> None:
        if not cores:
            raise ClusterError("a cluster needs at least one broker")
        self._cores: dict[str, object] = {}
        self._up: dict[str, bool] = {}
        for core in cores:
            name = core.config.broker_name
            if name in self._cores:
                raise ClusterError(f"two brokers are named {name}")
            self._cores[name] = core
            self._up[name] = True
            core.names = self
        clocks = {id(c.clock) for c in cores}
        if len(clocks) != 1:
            raise ClusterError("the brokers of a cluster share one clock")
        self.clock = cores[0].clock
        self.cluster_name = cores[0].config.broker_cluster_name
        # Called after anything that may have made a member emit (a clock advance):
        # drivers write what each core queued for its connections.
        self.after_change: list[Callable[[], None]] = []
        # The driver's listeners: ``stop(name)`` / ``start(name)`` close and reopen the
        # broker's own port (None: nothing listens, as in process).
        self.control = None

    # -- members ----------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return list(self._cores)

    def core(self, name: str):
        self._known(name)
        return self._cores[name]

    def up(self, name: str) -> bool:
        self._known(name)
        return self._up[name]

    def live_cores(self) -> list:
        return [c for n, c in self._cores.items() if self._up[n]]

    def _known(self, name: str) -> None:
        if name not in self._cores:
            raise ClusterError(f"no broker named {name!r}; the brokers are {', '.join(self._cores)}")

    def states(self) -> list[BrokerState]:
        return [BrokerState(n, c.addr, self._up[n], c.config.broker_permission, len(c.topics.table))
                for n, c in self._cores.items()]

    # -- faults -------------------------------------------------------------------------------
    def set_write(self, name: str, on: bool) -> int:
        """Switch a broker's write permission (brokerPermission 6 / 4); returns the new one."""
        core = self.core(name)
        perm = core.config.broker_permission
        perm = perm | PERM_WRITE if on else perm & ~PERM_WRITE
        core.set_broker_permission(perm)
        return perm

    def check_can_stop(self, name: str) -> None:
        """Refuse to stop a broker that is down, or the last one up serving some topic
        (its clients would have nowhere to go): ClusterError."""
        if not self.up(name):
            raise ClusterError(f"{name} is already stopped")
        others = [c for n, c in self._cores.items() if n != name and self._up[n]]
        if not others:
            raise ClusterError(f"{name} is the last broker up; stopping it would leave no broker")
        core = self._cores[name]
        served = {t for c in others for t in c.topics.table}
        alone = sorted(t for t in core.topics.table if t not in served and not _internal(t))
        if alone:
            more = f" and {len(alone) - 3} more" if len(alone) > 3 else ""
            raise ClusterError(f"{name} is the last broker up serving topic {', '.join(alone[:3])}{more}; "
                               f"create it on another broker first (topic create T --broker NAME)")

    def stop(self, name: str) -> None:
        """Take ``name`` out of every route and stop it answering (its store flushed,
        its clients' connections dropped by the driver's ``control.stop``)."""
        self.check_can_stop(name)
        core = self._cores[name]
        core.flush()
        core.stopped = True
        self._up[name] = False
        if self.control is not None:
            self.control.stop(name)

    def start(self, name: str) -> None:
        """Back in the routes, answering again; what came due while it was down is done
        now. The driver's ``control.start`` listens again first (an OSError from it
        leaves the broker stopped)."""
        self._known(name)
        if self._up[name]:
            raise ClusterError(f"{name} is already running")
        if self.control is not None:
            self.control.start(name)
        core = self._cores[name]
        core.stopped = False
        self._up[name] = True
        core.tick()
        for fn in self.after_change:
            fn()

    # -- the name server ------------------------------------------------------------------------
    def brokers(self) -> tuple[BrokerRoute, ...]:
        return tuple(BrokerRoute(c.config.broker_cluster_name, n, c.addr)
                     for n, c in self._cores.items() if self._up[n])

    def route(self, topic: str) -> TopicRoute | None:
        """Every up broker's queues of ``topic``; None when no up broker has it."""
        queues, brokers = [], []
        for n, c in self._cores.items():
            if not self._up[n]:
                continue
            tc = c.topics.get(topic)
            if tc is None:
                continue
            queues.append(QueueRoute(n, tc.read_queue_nums, tc.write_queue_nums,
                                     tc.perm & c.config.broker_permission, tc.topic_sys_flag))
            brokers.append(BrokerRoute(c.config.broker_cluster_name, n, c.addr))
        if not queues:
            return None
        return TopicRoute(tuple(queues), tuple(brokers))

    # -- time ---------------------------------------------------------------------------------
    def next_deadline(self) -> int | None:
        ds = [d for d in (c.next_deadline() for c in self.live_cores()) if d is not None]
        return min(ds) if ds else None

    def advance_clock(self, ms: int) -> int:
        """Move the shared virtual clock by ``ms``, ticking every up broker at each
        deadline on the way, in time order."""
        target = advance_together(self.clock, self.live_cores(), ms)
        for fn in self.after_change:
            fn()
        return target

    def flush(self) -> None:
        for c in self.live_cores():
            c.flush()

    def _check(self) -> None:
        assert len({id(c.clock) for c in self._cores.values()}) == 1
        assert all(c.names is self for c in self._cores.values())
        for c in self.live_cores():
            c._check()


def live_members(core) -> list:
    """The running brokers of ``core``'s cluster, or ``core`` alone (a request any member
    answers for the whole cluster: topic lists, dead letters)."""
    return core.names.live_cores() if isinstance(core.names, Cluster) else [core]


# the last millisecond a virtual clock may reach: ISO 8601's four-digit years (every time
# the CLI, the dashboard and the logs print), well inside a record's 64-bit timestamps
CLOCK_MAX_MS = 253_402_300_799_999


def advance_together(clock, cores: list, ms: int) -> int:
    """Move a virtual ``clock`` forward by ``ms``, ticking ``cores`` at every deadline
    of any of them on the way, so everything due by then has been re-stored and
    waiting pulls answered; returns the new time."""
    if not getattr(clock, "is_virtual", False):
        raise ClockError("this server runs on the real clock; restart it with `rocketmq-emulator serve "
                         "--clock virtual` (or `./dev serve --clock virtual`) to move its time")
    if ms < 0:
        raise ValueError(f"cannot move the clock backwards ({ms} ms)")
    start = clock.now_ms()
    target = start + ms
    if target > CLOCK_MAX_MS:
        raise ClockError(f"the clock cannot go past 9999-12-31T23:59:59.999Z ({CLOCK_MAX_MS} ms: what a record's "
                         f"timestamp and an ISO time take); it is at {start} ms, the advance was {ms} ms")
    while True:
        for c in cores:
            c.tick()
        deadlines = [d for d in (c.next_deadline() for c in cores) if d is not None]
        d = min(deadlines) if deadlines else None
        if d is None or d > target:
            break
        clock.advance_to(max(d, clock.now_ms()))
    clock.advance_to(target)
    for c in cores:
        c.rates.jumped(start, target)       # (a chart of rates says the clock jumped here)
        c.tick()
    return target


def _internal(topic: str) -> bool:
    """Topics every broker makes for itself: the system topics and the groups' retry
    and dead-letter topics."""
    return is_system_topic(topic) or topic.startswith((RETRY_PREFIX, DLQ_PREFIX))


def _perm_text(perm: int) -> str:
    return {PERM_READ | PERM_WRITE: "read+write", PERM_READ: "read only", PERM_WRITE: "write only"}.get(
        perm & (PERM_READ | PERM_WRITE), "none")


def next_due_ms(cores: list) -> int | None:
    """When the next delayed message or transaction check-back of any running broker is
    due (None: none waits): where `clock advance next` and the dashboard's "next" button
    move time to."""
    live = [c for c in cores if not c.stopped]
    due = [d for d in [c.schedule.scheduler.next_deadline(c.clock.now_ms()) for c in live] +
           [c.transactions.next_deadline() for c in live] if d is not None]
    return min(due) if due else None
