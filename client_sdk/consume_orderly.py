"""Orderly consumption (RocketMQ's ConsumeMessageOrderlyService).

Theory of operation
-------------------
In CLUSTERING a queue is consumed only by the consumer that holds its broker lock
(LOCK_BATCH_MQ, renewed every 20 s; the client treats a lock older than 30 s as
expired), so one queue has one consumer and messages are seen in queue order. At most
one consume task per queue exists: the ProcessQueue's ``consuming`` flag starts it when
messages arrive and it runs until ``take_messages`` finds the queue empty. Each step
takes ``consume_message_batch_max_size`` messages into the consuming map and calls the
listener:

- SUCCESS commits them (the committed offset moves past them).
- SUSPEND_CURRENT_QUEUE_A_MOMENT (also an exception, or with a warning a non-status)
  puts them back and re-delivers the *same* messages after
  ``suspend_current_queue_time_millis`` (context value, else the consumer's 1000 ms,
  clamped to 10..30000) — the whole queue waits meanwhile (checklist 79). Each failure
  adds one to the message's local reconsumeTimes.
- With a finite ``max_reconsume_times`` M, a message failing with reconsumeTimes >= M
  is republished to %RETRY%<group> with RECONSUME_TIME = reconsumeTimes, which the
  broker routes to %DLQ%<group>; the queue then commits past it (checklist 80). The
  default −1 means unlimited: the queue blocks until the listener succeeds.
"""
from __future__ import annotations

import logging
from typing import Callable

from rocketmq_emulator.store.records import Prop

from .errors import ListenerResultError
from .listener import ConsumeOrderlyContext, ConsumeOrderlyStatus
from .message import MessageQueue
from .process_queue import ProcessQueue
from .roles import ConsumerRole

__all__ = ["ConsumeMessageOrderlyService", "MIN_SUSPEND_TIME_MILLIS", "MAX_SUSPEND_TIME_MILLIS"]

log = logging.getLogger("client_sdk.consume")

MIN_SUSPEND_TIME_MILLIS = 10
MAX_SUSPEND_TIME_MILLIS = 30000
_S = ConsumeOrderlyStatus
_VALID = frozenset(ConsumeOrderlyStatus)


class ConsumeMessageOrderlyService:
    orderly = True

    def __init__(self, consumer: ConsumerRole, listener: Callable) -> None:
        self.consumer = consumer
        self.listener = listener
        self.runtime = consumer.runtime
        self.stats = consumer.stats

    def submit(self, msgs, pq: ProcessQueue, mq: MessageQueue, dispatch: bool) -> None:
        if dispatch:
            self.runtime.call_soon(self.consume, pq, mq)

    def _submit_later(self, pq: ProcessQueue, mq: MessageQueue, delay_ms: int) -> None:
        self.runtime.call_later(delay_ms, self.submit, None, pq, mq, True)

    def _try_lock_later_and_reconsume(self, pq: ProcessQueue, mq: MessageQueue, delay_ms: int) -> None:
        def relock():
            if pq.dropped:
                return
            self._submit_later(pq, mq, 10 if self.consumer.lock_one(mq) else 3000)
        self.runtime.call_later(delay_ms, relock)

    def consume(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        """ConsumeRequest.run, one batch per task so other queues get their turn."""
        if pq.dropped:
            return
        c = self.consumer
        now = self.runtime.clock.now_ms()
        if not c.broadcasting and (not pq.locked or pq.is_lock_expired(now)):
            self._try_lock_later_and_reconsume(pq, mq, 100 if not pq.locked else 10)
            return
        msgs = pq.take_messages(c.consume_message_batch_max_size, now)
        if not msgs:
            return
        retry_topic = c.retry_topic
        for m in msgs:
            if m.topic == retry_topic:
                rt = m.properties.get(Prop.RETRY_TOPIC)
                if rt is not None:
                    m.topic = rt
        self.stats.delivered += len(msgs)
        ctx = ConsumeOrderlyContext(mq)
        try:
            status = self.listener(msgs, ctx)
        except Exception as exc:
            self.stats.listener_exceptions += 1
            log.warning("%s: orderly listener raised %s: %s; suspending the queue", c.group,
                        type(exc).__name__, exc)
            status = _S.SUSPEND_CURRENT_QUEUE_A_MOMENT
        else:
            if status not in _VALID:
                status = self._bad_result(status)
        if pq.dropped:
            return
        if self.process_consume_result(msgs, status, ctx, pq, mq):
            self.runtime.call_soon(self.consume, pq, mq)

    def _bad_result(self, status) -> ConsumeOrderlyStatus:
        c = self.consumer
        self.stats.bad_listener_results += 1
        hint = ("None (did the listener forget `return ConsumeOrderlyStatus.SUCCESS`?)" if status is None
                else f"{status!r} ({type(status).__name__})")
        err = ListenerResultError(f"consumer group {c.group}: the orderly message listener returned {hint}; "
                                  f"expected ConsumeOrderlyStatus.SUCCESS or SUSPEND_CURRENT_QUEUE_A_MOMENT. "
                                  f"Treated as SUSPEND_CURRENT_QUEUE_A_MOMENT, as RocketMQ does.")
        log.error("%s", err)
        if c.strict:
            c.report_error(err)
        return _S.SUSPEND_CURRENT_QUEUE_A_MOMENT

    def suspend_time_ms(self, ctx: ConsumeOrderlyContext) -> int:
        t = ctx.suspend_current_queue_time_millis
        if t == -1:
            t = self.consumer.suspend_current_queue_time_millis
        return min(max(t, MIN_SUSPEND_TIME_MILLIS), MAX_SUSPEND_TIME_MILLIS)

    def process_consume_result(self, msgs, status, ctx: ConsumeOrderlyContext, pq: ProcessQueue,
                               mq: MessageQueue) -> bool:
        """Returns whether to keep consuming this queue now."""
        stats = self.stats
        cont = True
        commit_offset = -1
        if ctx.auto_commit:
            if status in (_S.SUCCESS, _S.COMMIT, _S.ROLLBACK):
                if status is not _S.SUCCESS:
                    log.warning("the message queue consume result is illegal, we think you want to ack these "
                                "message %s", mq)
                stats.consume_ok += len(msgs)
                commit_offset = pq.commit()
            else:
                stats.consume_failed += len(msgs)
                if self.check_reconsume_times(msgs):
                    pq.make_message_to_consume_again(msgs)
                    self._submit_later(pq, mq, self.suspend_time_ms(ctx))
                    cont = False
                else:
                    commit_offset = pq.commit()
        else:
            if status is _S.SUCCESS:
                stats.consume_ok += len(msgs)
            elif status is _S.COMMIT:
                stats.consume_ok += len(msgs)
                commit_offset = pq.commit()
            elif status is _S.ROLLBACK:
                stats.consume_failed += len(msgs)
                pq.rollback()
                self._submit_later(pq, mq, self.suspend_time_ms(ctx))
                cont = False
            else:
                stats.consume_failed += len(msgs)
                if self.check_reconsume_times(msgs):
                    pq.make_message_to_consume_again(msgs)
                    self._submit_later(pq, mq, self.suspend_time_ms(ctx))
                    cont = False
        if commit_offset >= 0 and not pq.dropped:
            self.consumer.offset_store.update(mq, commit_offset, False)
        return cont

    def check_reconsume_times(self, msgs) -> bool:
        """True if the messages must be suspended (retried locally); False if every one
        of them went to the broker's DLQ path."""
        c = self.consumer
        max_times = c.max_reconsume_times_orderly
        suspend = False
        for m in msgs:
            if m.reconsume_times >= max_times:
                m.properties[Prop.RECONSUME_TIME] = str(m.reconsume_times)
                if not c.send_back_as_normal_message(m, reconsume_time=m.reconsume_times):
                    suspend = True
                    m.reconsume_times += 1
                else:
                    self.stats.dead_lettered += 1
            else:
                suspend = True
                m.reconsume_times += 1
        return suspend
