"""Listener results and contexts (RocketMQ's ConsumeConcurrentlyStatus,
ConsumeOrderlyStatus, ConsumeConcurrentlyContext, ConsumeOrderlyContext) and the two
listener kinds.

A listener is a function ``(msgs: list[MessageExt], context) -> status`` or an object
with ``consume_message(msgs, context)``. Raising an exception counts as
RECONSUME_LATER (concurrently) / SUSPEND_CURRENT_QUEUE_A_MOMENT (orderly), as in
RocketMQ.
"""
from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from dataclasses import dataclass

from .message import MessageExt, MessageQueue

__all__ = [
    "ConsumeConcurrentlyStatus",
    "ConsumeOrderlyStatus",
    "ConsumeConcurrentlyContext",
    "ConsumeOrderlyContext",
    "MessageListenerConcurrently",
    "MessageListenerOrderly",
    "CONSUME_SUCCESS",
    "RECONSUME_LATER",
    "SUCCESS",
    "SUSPEND_CURRENT_QUEUE_A_MOMENT",
]

ACK_INDEX_DEFAULT = 2 ** 31 - 1   # Integer.MAX_VALUE: "everything acked"


class ConsumeConcurrentlyStatus(enum.Enum):
    """CONSUME_SUCCESS acks the batch (up to ``context.ack_index``); RECONSUME_LATER
    sends every message of the batch back for a delayed retry."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    """SUCCESS commits; SUSPEND_CURRENT_QUEUE_A_MOMENT re-delivers the same messages
    after ``suspend_current_queue_time_millis`` and holds the queue. COMMIT and ROLLBACK
    are RocketMQ's deprecated values, meaningful only with ``auto_commit = False``."""

    SUCCESS = "SUCCESS"
    ROLLBACK = "ROLLBACK"
    COMMIT = "COMMIT"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


CONSUME_SUCCESS = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
RECONSUME_LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER
SUCCESS = ConsumeOrderlyStatus.SUCCESS
SUSPEND_CURRENT_QUEUE_A_MOMENT = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    """Per-batch context of a concurrently listener.

    ``ack_index`` (ackIndex): with CONSUME_SUCCESS, messages after this index are sent
    back; e.g. 3 acks ``msgs[0..3]`` and retries the rest. Ignored with RECONSUME_LATER.
    ``delay_level_when_next_consume`` (delayLevelWhenNextConsume): 0 lets the broker
    choose level 3 + reconsumeTimes; > 0 forces that level; < 0 sends straight to the DLQ.
    """

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    ack_index: int = ACK_INDEX_DEFAULT

    # RocketMQ's spellings, for readers coming from Java.
    @property
    def ackIndex(self) -> int:  # noqa: N802
        return self.ack_index

    @ackIndex.setter
    def ackIndex(self, value: int) -> None:  # noqa: N802
        self.ack_index = value

    @property
    def delayLevelWhenNextConsume(self) -> int:  # noqa: N802
        return self.delay_level_when_next_consume

    @delayLevelWhenNextConsume.setter
    def delayLevelWhenNextConsume(self, value: int) -> None:  # noqa: N802
        self.delay_level_when_next_consume = value


@dataclass(slots=True)
class ConsumeOrderlyContext:
    """Per-batch context of an orderly listener. ``suspend_current_queue_time_millis``
    (suspendCurrentQueueTimeMillis) −1 uses the consumer's setting (1000 ms); the value
    is clamped to 10..30000. ``auto_commit`` (default True) commits on SUCCESS."""

    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_time_millis: int = -1


class MessageListenerConcurrently(ABC):
    @abstractmethod
    def consume_message(self, msgs: list[MessageExt], context: ConsumeConcurrentlyContext
                        ) -> ConsumeConcurrentlyStatus: ...


class MessageListenerOrderly(ABC):
    @abstractmethod
    def consume_message(self, msgs: list[MessageExt], context: ConsumeOrderlyContext) -> ConsumeOrderlyStatus: ...
