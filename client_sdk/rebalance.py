"""Queue allocation across a group's consumers (RocketMQ's RebalanceImpl /
RebalancePushImpl with AllocateMessageQueueAveragely).

CLUSTERING: every consumer of a group sorts the topic's queues and the group's client
ids (GET_CONSUMER_LIST_BY_GROUP) the same way and takes its contiguous share, so the
shares never overlap. BROADCASTING: every consumer takes every queue. Runs on start,
every 20 s, and at once on NOTIFY_CONSUMER_IDS_CHANGED. A queue that leaves this
consumer is dropped (in-flight results are ignored), its offset persisted and, for an
orderly consumer, its broker lock released; a queue that arrives gets a fresh
ProcessQueue starting at the offset ``compute_pull_from_where`` finds.
"""
from __future__ import annotations

import logging
from .errors import MQClientError, RemotingError
from .message import MessageQueue
from .process_queue import ProcessQueue
from .roles import ConsumerRole

__all__ = ["allocate_averagely", "Rebalancer"]

log = logging.getLogger("client_sdk.rebalance")


def allocate_averagely(current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]) -> list[MessageQueue]:
    """AllocateMessageQueueAveragely: the first ``len(mq) % len(cid)`` consumers get one
    extra queue; shares are contiguous in the sorted queue list."""
    if current_cid not in cid_all or not mq_all:
        return []
    index = cid_all.index(current_cid)
    n_mq, n_cid = len(mq_all), len(cid_all)
    mod = n_mq % n_cid
    if n_mq <= n_cid:
        average = 1
    elif mod > 0 and index < mod:
        average = n_mq // n_cid + 1
    else:
        average = n_mq // n_cid
    start = index * average if (mod > 0 and index < mod) else index * average + mod
    count = min(average, n_mq - start)
    return [mq_all[(start + i) % n_mq] for i in range(max(0, count))]


class Rebalancer:
    """The process-queue table of one push consumer and the rebalance that maintains it."""

    def __init__(self, consumer: ConsumerRole) -> None:
        self.consumer = consumer
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}

    def do_rebalance(self) -> None:
        c = self.consumer
        for topic in list(c.subscriptions):
            try:
                self._rebalance_topic(topic)
            except (MQClientError, RemotingError) as exc:
                log.warning("%s: rebalance of %s failed: %s", c.group, topic, exc)
        # Queues of topics no longer subscribed.
        for mq in [mq for mq in self.process_queue_table if mq.topic not in c.subscriptions]:
            pq = self.process_queue_table.pop(mq)
            pq.dropped = True

    def _rebalance_topic(self, topic: str) -> None:
        c = self.consumer
        # A topic without a route yet (e.g. auto-created by a later send) is asked for
        # again at every rebalance rather than only at the 30 s route poll.
        route = c.instance.get_route(topic, refresh=c.instance.routes.get(topic) is None)
        if route is None or not route.subscribe_queues:
            if topic not in c.warned_no_route:
                c.warned_no_route.add(topic)
                log.warning("%s: no route for subscribed topic %s yet; retrying every rebalance", c.group, topic)
            return
        mq_all = sorted(route.subscribe_queues)
        if c.broadcasting:
            mine = mq_all
        else:
            cids = sorted(c.instance.api.get_consumer_id_list(c.group))
            if not cids:
                return
            mine = allocate_averagely(c.instance.client_id, mq_all, cids)
        self.update_process_queue_table(topic, set(mine))

    def update_process_queue_table(self, topic: str, mq_set: set[MessageQueue]) -> bool:
        c = self.consumer
        changed = False
        for mq, pq in list(self.process_queue_table.items()):
            if mq.topic != topic:
                continue
            if mq not in mq_set:
                pq.dropped = True
                if self.remove_unnecessary_message_queue(mq, pq):
                    del self.process_queue_table[mq]
                    changed = True
        new_pulls = []
        for mq in sorted(mq_set):
            if mq in self.process_queue_table:
                continue
            if c.orderly and not c.broadcasting and not c.lock_one(mq):
                log.info("%s: queue %s is locked by another consumer; not taking it yet", c.group, mq)
                continue
            c.offset_store.remove(mq)   # a stale in-memory offset from an earlier assignment
            next_offset = c.compute_pull_from_where(mq)
            if next_offset < 0:
                continue
            pq = ProcessQueue(c.now_ms())
            if c.orderly and not c.broadcasting:
                pq.locked = True
                pq.last_lock_timestamp = c.now_ms()
            self.process_queue_table[mq] = pq
            new_pulls.append((mq, pq, next_offset))
            changed = True
        for mq, pq, next_offset in new_pulls:
            c.start_pulling(mq, pq, next_offset)
        return changed

    def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        c = self.consumer
        c.offset_store.persist(mq)
        c.offset_store.remove(mq)
        if c.orderly and not c.broadcasting:
            try:
                c.instance.api.unlock_batch_mq(c.group, c.instance.client_id, [mq], oneway=True)
            except (MQClientError, RemotingError):
                pass
        return True

    def drop_all(self) -> None:
        for pq in self.process_queue_table.values():
            pq.dropped = True
        self.process_queue_table.clear()
