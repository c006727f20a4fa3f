"""Consumer offset stores (RocketMQ's RemoteBrokerOffsetStore / LocalFileOffsetStore).

The in-memory table is what the consume services update (increase-only for
concurrently, checklist 71); it reaches the broker piggy-backed on pulls (commitOffset)
and by a oneway UPDATE_CONSUMER_OFFSET every 5 s (persistConsumerOffsetInterval).
BROADCASTING keeps offsets on the client only; here that "file" is in memory and lives
as long as the consumer object.
"""
from __future__ import annotations

import enum
import logging

from .api import BrokerAPI
from .errors import MQBrokerError, MQClientError, RemotingError
from .message import MessageQueue

__all__ = ["ReadOffsetType", "RemoteBrokerOffsetStore", "LocalOffsetStore"]

log = logging.getLogger("client_sdk.offsets")


class ReadOffsetType(enum.Enum):
    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


class _OffsetTable:
    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        """Store ``offset``; with ``increase_only`` a smaller value is refused
        (MixAll.compareAndIncreaseOnly: 5 → 6 ok, 6 → 4 refused)."""
        table = self.table                  # (``in`` and ``[]``: every acknowledged message)
        if mq not in table or not increase_only or offset > table[mq]:
            table[mq] = offset

    def remove(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)

    def clone(self, topic: str | None = None) -> dict[MessageQueue, int]:
        return {mq: o for mq, o in self.table.items() if topic is None or mq.topic == topic}


class RemoteBrokerOffsetStore(_OffsetTable):
    """CLUSTERING: offsets live on the broker."""

    def __init__(self, api: BrokerAPI, group: str) -> None:
        super().__init__()
        self.api = api
        self.group = group

    def read(self, mq: MessageQueue, how: ReadOffsetType = ReadOffsetType.MEMORY_FIRST_THEN_STORE) -> int:
        """The offset, −1 when none is stored (broker QUERY_NOT_FOUND), −2 on a failure."""
        if how is not ReadOffsetType.READ_FROM_STORE:
            off = self.table.get(mq)
            if off is not None or how is ReadOffsetType.READ_FROM_MEMORY:
                return -1 if off is None else off
        try:
            off = self.api.query_consumer_offset(self.group, mq.topic, mq.queue_id, mq.broker_name)
        except MQBrokerError:
            return -1
        except (MQClientError, RemotingError) as exc:
            log.warning("query offset of %s failed: %s", mq, exc)
            return -2
        self.update(mq, off, False)
        return off

    def persist(self, mq: MessageQueue) -> None:
        """Send ``mq``'s offset to its broker. A broker that cannot take it (stopped, gone)
        is logged and skipped, as upstream's persist does: the offset stays here, and the
        caller (a rebalance dropping the queue) goes on."""
        off = self.table.get(mq)
        if off is not None:
            self._send(mq, off)

    def persist_all(self, mqs) -> None:
        """persistAll: send every assigned queue's offset (each broker on its own: one that
        is down does not keep the others' offsets back); forget unassigned ones."""
        wanted = set(mqs)
        for mq, off in list(self.table.items()):
            if mq in wanted:
                self._send(mq, off)
            else:
                del self.table[mq]

    def _send(self, mq: MessageQueue, off: int) -> None:
        try:
            self.api.update_consumer_offset_oneway(self.group, mq.topic, mq.queue_id, off, mq.broker_name)
        except (MQClientError, RemotingError) as exc:
            log.warning("updateConsumeOffsetToBroker of %s failed: %s", mq, exc)


class LocalOffsetStore(_OffsetTable):
    """BROADCASTING: each consumer keeps its own offsets (LocalFileOffsetStore)."""

    def __init__(self) -> None:
        super().__init__()
        self.persisted: dict[MessageQueue, int] = {}

    def read(self, mq: MessageQueue, how: ReadOffsetType = ReadOffsetType.MEMORY_FIRST_THEN_STORE) -> int:
        if how is not ReadOffsetType.READ_FROM_STORE:
            off = self.table.get(mq)
            if off is not None or how is ReadOffsetType.READ_FROM_MEMORY:
                return -1 if off is None else off
        off = self.persisted.get(mq)
        if off is None:
            return -1
        self.update(mq, off, False)
        return off

    def persist(self, mq: MessageQueue) -> None:
        if mq in self.table:
            self.persisted[mq] = self.table[mq]

    def persist_all(self, mqs) -> None:
        for mq in mqs:
            self.persist(mq)
