"""What the simulator's one-at-a-time consumers (5.x, Pulsar) share: they call the core
in process through a transport of the embedded broker, wake on the core's events, and
hand their listener a stored record seen as the application sees a message (with the
attributes the checker reads; each consumer adds how it counts attempts)."""
from __future__ import annotations

from rocketmq_emulator.store.records import Prop

__all__ = ["StoredDelivery", "InProcessConsumer"]


class StoredDelivery:
    __slots__ = ("record",)

    def __init__(self, record) -> None:
        self.record = record

    @property
    def body(self) -> bytes:
        return self.record.body

    @property
    def properties(self) -> dict:
        return self.record.properties

    @property
    def msg_id(self) -> str:
        return self.record.properties.get(Prop.UNIQ_KEY, "")

    @property
    def commit_log_offset(self) -> int:
        return self.record.commit_log_offset

    @property
    def store_host(self):
        return self.record.store_host


class InProcessConsumer:
    """The plumbing: ``transport`` (set by ``connect``), ``_call(fn)`` runs ``fn(core)``
    inside a core call, ``_arm()`` schedules one ``_receive`` on the client loop."""

    what = "consumer"               # (for the error when the hub cannot give the core)

    def __init__(self, embedded) -> None:
        self.embedded = embedded
        self.transport = None
        self._armed = False
        self._closed = False
        self._unsubscribe = None

    def connect(self) -> None:
        self.transport = self.embedded.connect()

    def _core(self):
        core = self.transport.core()        # (with fault rules too: its calls ask the broker's door)
        if core is None:
            raise RuntimeError(f"the simulator's {self.what} needs the core's typed calls "
                               "(no observer or injected fault on the hub)")
        return core

    def _call(self, fn):
        core = self._core()
        try:
            return fn(core)
        finally:
            self.transport.core_done()

    def _arm(self) -> None:
        if not self._armed and not self._closed:
            self._armed = True
            runtime = self.embedded.runtime
            runtime.call_at(runtime.now_ms(), self._receive)

    def _receive(self) -> None:
        raise NotImplementedError
