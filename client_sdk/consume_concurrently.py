"""Concurrent consumption (RocketMQ's ConsumeMessageConcurrentlyService).

Theory of operation
-------------------
A pull result is cut into batches of ``consume_message_batch_max_size`` (default 1);
each batch is one task on the loop. A task restores the business topic of retried
messages (resetRetryAndNamespace), stamps CONSUME_START_TIME, calls the listener and
settles the batch:

- CONSUME_SUCCESS: ``context.ack_index`` (default "all") says how many are acked; the
  messages after it are treated as failed. RECONSUME_LATER, an exception, or (with a
  warning) anything that is not a status fails the whole batch (checklist 72).
- CLUSTERING: every failed message is sent back to the broker (CONSUMER_SEND_MSG_BACK,
  delay level ``context.delay_level_when_next_consume``, 0 = broker picks 3 + n). If
  that fails the consumer publishes the copy to %RETRY%<group> itself through its inner
  producer. A send-back that succeeds settles the message: the retry is now the
  broker's job. If both fail, the message's reconsumeTimes goes up by one, it stays in
  the ProcessQueue and is consumed again locally after 5 s (checklist 74) — holding the
  committed offset behind it meanwhile.
- BROADCASTING: failed messages are dropped (logged), never sent back (checklist 73).
- The settled messages leave the ProcessQueue; its answer (the smallest offset still
  in flight) is stored increase-only (checklist 71).

Every ``consume_timeout`` minutes (15) the smallest in-flight message of each queue is
checked: if its listener started more than consume_timeout ago, it is sent back with
delay level 3 and removed (checklist 81) — in this single-threaded runtime that can
only happen when a listener "sleeps" by advancing the virtual clock itself.
"""
from __future__ import annotations

import logging
from typing import Callable

from rocketmq_emulator.store.records import Prop

from .errors import ListenerResultError
from .listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from .message import MessageQueue
from .process_queue import ProcessQueue
from .roles import ConsumerRole

__all__ = ["ConsumeMessageConcurrentlyService", "LOCAL_RETRY_DELAY_MS"]

log = logging.getLogger("client_sdk.consume")

LOCAL_RETRY_DELAY_MS = 5000        # submitConsumeRequestLater
EXPIRED_DELAY_LEVEL = 3            # cleanExpiredMsg sends back with level 3
_SUCCESS = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
_LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER


class ConsumeMessageConcurrentlyService:
    orderly = False

    def __init__(self, consumer: ConsumerRole, listener: Callable) -> None:
        self.consumer = consumer
        self.listener = listener
        self.runtime = consumer.runtime
        self.stats = consumer.stats

    def submit(self, msgs: list, pq: ProcessQueue, mq: MessageQueue, dispatch: bool = True) -> None:
        """submitConsumeRequest: one task per batch of consume_message_batch_max_size."""
        size = self.consumer.consume_message_batch_max_size
        call_soon = self.runtime.call_soon
        if len(msgs) <= size:
            call_soon(self.consume, msgs, pq, mq)
        else:
            for i in range(0, len(msgs), size):
                call_soon(self.consume, msgs[i:i + size], pq, mq)

    def consume(self, msgs: list, pq: ProcessQueue, mq: MessageQueue) -> None:
        """ConsumeRequest.run."""
        if pq.dropped:
            return
        c = self.consumer
        stats = self.stats
        retry_topic = c.retry_topic
        now = self.runtime.clock.now_ms()
        start = str(now)
        for m in msgs:
            props = m.properties
            if m.topic == retry_topic:
                rt = props.get(Prop.RETRY_TOPIC)
                if rt is not None:
                    m.topic = rt          # resetRetryAndNamespace (checklist 76)
            props[Prop.CONSUME_START_TIME] = start
        stats.delivered += len(msgs)
        ctx = ConsumeConcurrentlyContext(mq)
        try:
            status = self.listener(msgs, ctx)
        except Exception as exc:  # the listener's own failure: RocketMQ retries the batch
            stats.listener_exceptions += 1
            log.warning("%s: listener raised %s: %s; the batch will be retried (RECONSUME_LATER)",
                        c.group, type(exc).__name__, exc)
            status = _LATER
        else:
            if status is not _SUCCESS and status is not _LATER:
                status = self._bad_result(status)
        if pq.dropped:
            return
        self.process_consume_result(status, ctx, msgs, pq, mq)

    def _bad_result(self, status) -> ConsumeConcurrentlyStatus:
        c = self.consumer
        self.stats.bad_listener_results += 1
        if status is None:
            hint = "None (did the listener forget `return ConsumeConcurrentlyStatus.CONSUME_SUCCESS`?)"
        else:
            hint = f"{status!r} ({type(status).__name__})"
        err = ListenerResultError(f"consumer group {c.group}: the message listener returned {hint}; expected "
                                  f"ConsumeConcurrentlyStatus.CONSUME_SUCCESS or RECONSUME_LATER. "
                                  f"Treated as RECONSUME_LATER, as RocketMQ does.")
        log.error("%s", err)
        if c.strict:
            c.report_error(err)
        return _LATER

    def process_consume_result(self, status, ctx: ConsumeConcurrentlyContext, msgs: list, pq: ProcessQueue,
                               mq: MessageQueue) -> None:
        c = self.consumer
        stats = self.stats
        n = len(msgs)
        if status is _SUCCESS:
            ack = ctx.ack_index
            if ack >= n:
                ack = n - 1
            elif ack < -1:
                ack = -1
            stats.consume_ok += ack + 1
            stats.consume_failed += n - ack - 1
        else:
            ack = -1
            stats.consume_failed += n
        if ack < n - 1:
            if c.broadcasting:
                for i in range(ack + 1, n):
                    stats.dropped += 1
                    log.warning("%s: BROADCASTING, the message consume failed, drop it: %r", c.group, msgs[i])
            else:
                back_failed = []
                for i in range(ack + 1, n):
                    m = msgs[i]
                    if m.queue_offset not in pq.msg_tree:   # (pq.contains) already settled elsewhere (expired and sent back)
                        continue
                    if not c.send_message_back(m, ctx.delay_level_when_next_consume, mq.broker_name):
                        m.reconsume_times += 1
                        back_failed.append(m)
                if back_failed:
                    failed_ids = {id(m) for m in back_failed}
                    msgs = [m for m in msgs if id(m) not in failed_ids]
                    stats.local_retries += len(back_failed)
                    self.runtime.call_later(LOCAL_RETRY_DELAY_MS, self.submit, back_failed, pq, mq, True)
        offset = pq.remove_messages(msgs, self.runtime.clock.now_ms())
        if offset >= 0 and not pq.dropped:
            c.offset_store.update(mq, offset, True)

    def clean_expired(self, now_ms: int) -> None:
        """cleanExpiredMsg over every queue (checklist 81)."""
        c = self.consumer
        timeout_ms = c.consume_timeout * 60000
        for mq, pq in list(c.process_queues.items()):
            for _ in range(min(len(pq.msg_tree), 16)):
                m = pq.first_message()
                if m is None:
                    break
                started = m.properties.get(Prop.CONSUME_START_TIME)
                if not started or now_ms - int(started) <= timeout_ms:
                    break
                log.warning("%s: message %s has been consuming for over %d min; sending it back",
                            c.group, m.msg_id, c.consume_timeout)
                if not c.send_message_back(m, EXPIRED_DELAY_LEVEL, mq.broker_name):
                    break
                self.stats.expired += 1
                if pq.first_message() is m:
                    pq.remove_messages([m], now_ms)
