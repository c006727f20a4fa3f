"""The core's send operations (``BrokerCore.send``, ``send_batch``, ``send_back``): 4.9.8's msgCheck
(permission, topic name, auto-create from TBW102, %RETRY% auto-create, queue id), the
retry lifecycle for a send to %RETRY%<group>, then the one put path. No wire format:
the 4.x front (processors/send.py) reads headers into requests and maps outcomes.

``Sending`` is given the pieces it uses (the config, topic and group tables, the put
path, the records the core keeps, the store's reads, the send-back hooks), not the core."""
from __future__ import annotations

import logging
import random
from functools import lru_cache

from rocketmq_emulator.store import PutStatus
from rocketmq_emulator.store.records import PROP_CRC, MessageRecord, Prop, parse_host, properties_to_string

from ..config import PERM_READ, PERM_WRITE
from ..core_types import ConsumeMessageContext
from ..dialects import NOT_CREATED_BY_ROCKETMQ, is_pulsar_store_topic
from ..put_kinds import DEAD_LETTERED, SENT, SENT_BACK, SENT_BACK_DEAD
from .message_types import mismatch
from ..operations import (
    BatchSendRequest,
    SendBack,
    SendBackOutcome as B,
    SendBackResult,
    SendOutcome as O,
    SendRequest,
    SendResult,
)
from ..retry_lifecycle import rocketmq4_retry_send, rocketmq4_send_back
from .topics import DLQ_PREFIX, NOT_ALLOWED_SEND, RETRY_PREFIX, TopicNameError, validate_topic_name

__all__ = ["Sending", "SendBackHooks", "draw_queue"]


log = logging.getLogger("broker")


def draw_queue(rng: random.Random, queue_nums: int) -> int:
    """A queue among ``queue_nums``: ``rng.randrange(99999999) % queue_nums``, as the
    broker picks one (a send without a queue id, a send-back's retry queue). For a
    plain random.Random in one call: its randrange draws getrandbits(27) until below
    99999999, which is what this does."""
    if rng.__class__ is random.Random:
        r = rng.getrandbits(27)
        while r >= 99999999:
            r = rng.getrandbits(27)
        return r % queue_nums
    return rng.randrange(99999999) % queue_nums


@lru_cache(maxsize=4096)
def born_host(remote: str):
    """A connection's address as a record's born host (parsed once per connection)."""
    try:
        return parse_host(remote)
    except ValueError:
        return ("127.0.0.1", 0)


class SendBackHooks(list):
    """The functions told of every send-back (a ConsumeMessageContext each); one that
    fails is logged, not raised."""

    def run(self, ctx: ConsumeMessageContext) -> None:
        for fn in self:
            try:
                fn(ctx)
            except Exception:
                log.exception("send-back hook failed")


class Sending:
    def __init__(self, config, topics, groups, clock, rng, store, store_host, put, kept, schedule, transactions,
                 hooks: SendBackHooks) -> None:
        """``put``: the core's one put path (BrokerCore.put_message); ``kept``: the records
        it keeps (broker/kept_records.py); ``schedule``: the delay queue (its timer
        properties); ``transactions``: where a half message goes."""
        self.config = config
        self.topics = topics
        self.groups = groups
        self.clock = clock
        self.rng = rng
        self.store = store
        self.store_host = store_host
        self.put = put
        self.kept = kept
        self.schedule = schedule
        self.transactions = transactions
        self.hooks = hooks

    def _destination(self, topic: str, queue_id: int, producer_group: str, default_topic: str, default_nums: int):
        """msgCheck: (topic config, queue id) or the refusal."""
        if not self.config.broker_permission & PERM_WRITE:
            # 4.9.8 refuses only order topics here and relies on routes (perm without
            # write) to steer producers away; a direct send is refused outright so a
            # read-only broker behaves read-only for every client.
            return SendResult(O.BROKER_NOT_WRITEABLE, remark=f"the broker[{self.config.broker_ip}] sending message is forbidden")
        try:
            validate_topic_name(topic)
        except TopicNameError as exc:
            return SendResult(O.TOPIC_ILLEGAL, remark=str(exc))
        if topic in NOT_ALLOWED_SEND:
            return SendResult(O.TOPIC_NOT_ALLOWED, remark=f"Sending message to topic[{topic}] is forbidden.")
        tc = self.topics.get(topic)
        if tc is None:
            if is_pulsar_store_topic(topic):
                return SendResult(O.TOPIC_NOT_EXIST, remark=f"topic[{topic}] not exist, apply first please! "
                                                            f"({NOT_CREATED_BY_ROCKETMQ})")
            tc = self.topics.create_in_send(topic, default_topic, default_nums)
            if tc is None and topic.startswith(RETRY_PREFIX):
                tc = self.topics.create_system(topic, 1, PERM_READ | PERM_WRITE)
            if tc is None:
                return SendResult(O.TOPIC_NOT_EXIST, remark=f"topic[{topic}] not exist, apply first please!")
        if not tc.writeable:
            return SendResult(O.TOPIC_NOT_WRITEABLE, remark=f"the topic[{topic}] sending message is forbidden")
        if queue_id >= tc.queue_nums:
            return SendResult(O.QUEUE_ILLEGAL, remark=f"request queueId[{queue_id}] is illegal, topic {topic} has "
                                                      f"{tc.queue_nums} queues, producer: {producer_group}")
        if queue_id < 0:
            queue_id = draw_queue(self.rng, tc.write_queue_nums)
        return tc, queue_id


    @staticmethod
    def _stored(res, queue_id: int, msg_id: str | None = None) -> SendResult:
        if res.status is not PutStatus.PUT_OK:
            return SendResult(O.STORE_REFUSED, remark=res.remark or res.status.name, put_status=res.status)
        return SendResult(O.STORED, msg_id or res.msg_id, queue_id, res.queue_offset)


    def send(self, req: SendRequest, channel) -> SendResult:
        """Cost: dict look-ups for the checks, one put (MessageStore.put)."""
        checked = self._destination(req.topic, req.queue_id, req.producer_group, req.default_topic,
                               req.default_topic_queue_nums)
        if checked.__class__ is SendResult:
            return checked
        tc, qid = checked
        topic = req.topic
        try:
            size = len(req.body)
        except TypeError:                   # (not bytes: the store refuses it, saying so)
            size = 0
        if size > self.config.max_message_size:
            # maxMessageSize; a Pulsar topic takes Pulsar's largest message (the store holds the larger)
            limit = self.config.pulsar_max_message_size if is_pulsar_store_topic(topic) else self.config.max_message_size
            if size > limit:
                return SendResult(O.STORE_REFUSED, remark=f"the message body size {size} is over the max value {limit}",
                                  put_status=PutStatus.MESSAGE_ILLEGAL)
        props = dict(req.properties) if req.properties else {}
        delay = props.get(Prop.DELAY)
        if delay is not None and not delay.lstrip("-").isdigit():
            return SendResult(O.DELAY_ILLEGAL, remark=f"DELAY property {delay!r} is not an integer delay level")
        deliver_at = req.deliver_at_ms
        if deliver_at is None and delay is None and (Prop.TIMER_DELIVER_MS in props or Prop.TIMER_DELAY_MS in props
                                   or Prop.TIMER_DELAY_SEC in props):
            deliver_at = self.schedule.timer_property(props, self.clock.now_ms())
            if deliver_at is None:
                return SendResult(O.TIMER_ILLEGAL, remark="TIMER_DELIVER_MS / TIMER_DELAY_MS / TIMER_DELAY_SEC "
                                                          "must be a whole number")
        if deliver_at is not None and deliver_at - self.clock.now_ms() > self.config.timer_max_delay_sec * 1000:
            return SendResult(O.TIMER_ILLEGAL, remark=f"delivery time {deliver_at} is more than timerMaxDelaySec="
                                                      f"{self.config.timer_max_delay_sec} s ahead")
        if tc.message_type is not None:          # a 5.x topic's message type (broker/rocketmq_model/message_types.py)
            why = mismatch(tc.message_type, props, deliver_at)
            if why is not None:
                return SendResult(O.MESSAGE_TYPE_MISMATCH, remark=why)
        dlq_group = None
        if topic.startswith(RETRY_PREFIX):       # the client's fallback send-back: handleRetryAndDLQ
            group = topic[len(RETRY_PREFIX):]
            gc = self.groups.find(group)
            if gc is None:
                return SendResult(O.GROUP_NOT_EXIST, remark=f"subscription group not exist, {group}")
            max_times = gc.retry_max_times if req.max_reconsume_times is None else req.max_reconsume_times
            decision = rocketmq4_retry_send(group, props, req.reconsume_times, max_times, qid)
            if decision.dead_letter:
                tc = self.topics.create_system(decision.topic, 1, PERM_READ | PERM_WRITE)
                if not tc.writeable:
                    return SendResult(O.TOPIC_NOT_WRITEABLE, remark=f"the topic[{decision.topic}] sending message is forbidden")
                topic, qid, props, dlq_group = decision.topic, decision.queue_id, decision.properties, group
        props[Prop.CLUSTER] = self.config.broker_cluster_name
        # positional, in MessageRecord's field order (topic, body, queue_id, flag, properties,
        # sys_flag, born_timestamp, born_host, store_timestamp, store_host, reconsume_times):
        # keywords cost about 0.5 µs more, on every send
        rec = MessageRecord(topic, req.body, qid, req.flag, props, req.sys_flag, req.born_timestamp,
                            born_host(channel.remote), 0, self.store_host, req.reconsume_times)
        # WAIT stays in the map but not in the stored string (the broker strips it).
        rec.properties_text = properties_to_string(props, skip=Prop.WAIT)
        if Prop.TRAN_MSG in props and dlq_group is None and props[Prop.TRAN_MSG].lower() == "true" \
                and not topic.startswith(RETRY_PREFIX):
            # a transaction's half message: stored aside until its producer ends it (broker/rocketmq_model/transactions.py)
            return self._stored(self.transactions.prepare(rec), qid)
        res = self.put(rec, DEAD_LETTERED, dlq_group) if dlq_group else self.put(rec, SENT, None, None, deliver_at)
        return self._stored(res, req.queue_id if req.queue_id >= 0 else checked[1])


    def send_back(self, req: SendBack) -> SendBackResult:
        """BrokerCore.send_back: 4.9.8's checks, the retry lifecycle's decision, one put.
        Cost: a look-up of the stored message (the record the core keeps, or a read and a
        decode), one put."""
        group, offset = req.group, req.commit_log_offset
        table = self.groups.table               # (``in`` and ``[]``, not ``get``: a call fewer, every send-back)
        gc = table[group] if group in table else None
        if gc is None:
            gc = self.groups.find(group)
            if gc is None:
                return SendBackResult(B.GROUP_NOT_EXIST, f"subscription group not exist, {group}")
        if not self.config.broker_permission & PERM_WRITE:
            return SendBackResult(B.BROKER_NOT_WRITEABLE, f"the broker[{self.config.broker_ip}] sending message is forbidden")
        if gc.retry_queue_nums <= 0:
            return SendBackResult(B.DROPPED)

        new_topic = RETRY_PREFIX + group
        queue_id = draw_queue(self.rng, gc.retry_queue_nums)
        table = self.topics.table
        tc = table[new_topic] if new_topic in table else None
        if tc is None:
            tc = self.topics.create_system(new_topic, gc.retry_queue_nums, PERM_READ | PERM_WRITE)
        if not tc.perm & PERM_WRITE:
            return SendBackResult(B.TOPIC_NOT_WRITEABLE, f"the topic[{new_topic}] sending message is forbidden")

        kept = self.kept.get(offset)
        if kept is not None:
            old, stored = kept              # the record as the core stored it, its map as stored
            body_crc = old.body_crc         # (computed by this store: the copy's body is the same)
        else:
            old = self.store.look_message_by_offset(offset)
            if old is None:
                return SendBackResult(B.MESSAGE_NOT_FOUND, f"look message by offset failed, {offset}")
            stored = old.properties
            body_crc = None

        max_times = gc.retry_max_times if req.max_reconsume_times is None else req.max_reconsume_times
        # (the offsetMsgId is used only when no ORIGIN_MESSAGE_ID is there yet)
        origin = stored[Prop.ORIGIN_MESSAGE_ID] if Prop.ORIGIN_MESSAGE_ID in stored else None
        decision = rocketmq4_send_back(group, stored, old.topic, origin or old.offset_msg_id,
                                       old.reconsume_times, max_times, req.delay_level, queue_id)
        to_dlq, level, props, new_topic = decision.dead_letter, decision.delay_level, decision.properties, decision.topic
        if to_dlq:
            tc = self.topics.create_system(new_topic, 1, PERM_READ | PERM_WRITE)
            if not tc.writeable:
                return SendBackResult(B.TOPIC_NOT_WRITEABLE, f"the topic[{new_topic}] sending message is forbidden")
        if self.store.config.prop_crc:
            # The old record's CRC property is not the copy's: the store writes the copy's own
            # (it would cut this one out of the string; leaving it out here is the same string).
            props.pop(PROP_CRC, None)

        # positional (topic, body, queue_id, flag, properties, sys_flag, born_timestamp,
        # born_host, store_timestamp, store_host, reconsume_times), as send_message does
        rec = MessageRecord(new_topic, old.body, decision.queue_id, old.flag, props, old.sys_flag, old.born_timestamp,
                            old.born_host, 0, old.store_host, decision.attempt)
        # The copy's map: the stored one of the original plus the decision's strings, all
        # non-empty and without separators: what its stored string parses to (the kinds
        # vouch for it).
        if to_dlq:
            res = self.put(rec, SENT_BACK_DEAD, group, None, None, 0, body_crc)
        else:
            res = self.put(rec, SENT_BACK, group, level, None, 0, body_crc)
        ok = res.status is PutStatus.PUT_OK
        if self.hooks:
            self.hooks.run(ConsumeMessageContext(
                group, req.origin_topic or props.get(Prop.RETRY_TOPIC), req.origin_msg_id, offset,
                "SEND_BACK_TO_DLQ" if to_dlq else "SEND_BACK", ok, rec.reconsume_times, level, new_topic))
        if not ok:
            return SendBackResult(B.STORE_REFUSED, res.remark or res.status.name, decision.attempt, level)
        return SendBackResult(B.DEAD_LETTERED if to_dlq else B.RETRYING, None, decision.attempt, level)


    def send_batch(self, req: BatchSendRequest, channel) -> SendResult:
        """Every message checked before any is stored; ``msg_id`` is the comma-joined
        offsetMsgIds. A put that fails stops the batch there (those before stay stored,
        as upstream's)."""
        checked = self._destination(req.topic, req.queue_id, req.producer_group, req.default_topic,
                               req.default_topic_queue_nums)
        if checked.__class__ is SendResult:
            return checked
        _, qid = checked
        if req.topic.startswith(RETRY_PREFIX) or req.topic.startswith(DLQ_PREFIX):
            return SendResult(O.MESSAGE_ILLEGAL, remark="batch request does not support retry group " + req.topic)
        if not req.messages:
            return SendResult(O.MESSAGE_ILLEGAL, remark="empty batch")
        batch_props = dict(req.batch_properties or {})
        batch_props[Prop.CLUSTER] = self.config.broker_cluster_name
        records = []
        for flag, body, props in req.messages:
            if props.get(Prop.DELAY, "0") not in ("0", ""):
                return SendResult(O.MESSAGE_ILLEGAL, remark="a batch message cannot have a delay level")
            props = dict(props)
            props.update({k: v for k, v in batch_props.items() if k != Prop.WAIT})
            if len(body) > self.config.max_message_size:
                return SendResult(O.MESSAGE_ILLEGAL, remark=f"the message body size over max value, MAX: "
                                                            f"{self.config.max_message_size}")
            records.append(MessageRecord(topic=req.topic, body=body, queue_id=qid, flag=flag, properties=props,
                                         sys_flag=req.sys_flag, born_timestamp=req.born_timestamp,
                                         born_host=born_host(channel.remote), store_host=self.store_host))
        ids, first = [], None
        for rec in records:
            res = self.put(rec)
            if res.status is not PutStatus.PUT_OK:
                return self._stored(res, qid)
            ids.append(res.msg_id)
            first = first or res
        return self._stored(first, qid, ",".join(ids))
