"""CONSUMER_SEND_MSG_BACK (36), exactly as 4.9.8's asyncConsumerSendMsgBack.

Order of checks: group (auto-created by default) → broker writeable → retryQueueNums
<= 0 means success with nothing stored → %RETRY%<group> created/fetched → message
looked up by commit-log offset → the retry lifecycle's 4.x decision
(retry_lifecycle.rocketmq4_send_back: DLQ when reconsumeTimes >= max or delayLevel < 0,
else level = delayLevel or 3 + reconsumeTimes, and the copy's properties). The copy
keeps body, flag, sysFlag, born time/host and store host, with reconsumeTimes + 1.
"""
from __future__ import annotations

from rocketmq_emulator.store import PutStatus
from rocketmq_emulator.store.records import MessageRecord, Prop

from ..config import PERM_READ, PERM_WRITE
from ..core_types import ConsumeMessageContext
from ..events import EventKind
from ..protocol import ResponseCode as RC
from ..retry_lifecycle import rocketmq4_send_back
from ..topics import retry_topic

__all__ = ["consumer_send_msg_back"]


def consumer_send_msg_back(core, request, channel):
    offset = request.header_int("offset")
    group = request.header_str("group")
    delay_level = request.header_int("delayLevel")
    origin_msg_id = request.header("originMsgId")
    origin_topic = request.header("originTopic")
    header_max = request.header("maxReconsumeTimes")

    gc = core.groups.find(group)
    if gc is None:
        return request.response(RC.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}")
    if not core.writeable:
        return request.response(RC.NO_PERMISSION, f"the broker[{core.config.broker_ip}] sending message is forbidden")
    if gc.retry_queue_nums <= 0:
        return request.response(RC.SUCCESS)

    new_topic = retry_topic(group)
    queue_id = core.rng.randrange(99999999) % gc.retry_queue_nums
    tc = core.topics.create_system(new_topic, gc.retry_queue_nums, PERM_READ | PERM_WRITE)
    if not tc.writeable:
        return request.response(RC.NO_PERMISSION, f"the topic[{new_topic}] sending message is forbidden")

    old = core.store.look_message_by_offset(offset)
    if old is None:
        return request.response(RC.SYSTEM_ERROR, f"look message by offset failed, {offset}")

    max_times = gc.retry_max_times
    if request.version >= 121 and header_max not in (None, ""):
        max_times = int(header_max)
    decision = rocketmq4_send_back(group, old.properties, old.topic, old.offset_msg_id, old.reconsume_times,
                                   max_times, delay_level)
    to_dlq, level, props = decision.dead_letter, decision.delay_level, decision.properties
    if to_dlq:
        new_topic = decision.topic
        queue_id = 0
        tc = core.topics.create_system(new_topic, 1, PERM_READ | PERM_WRITE)
        if not tc.writeable:
            return request.response(RC.NO_PERMISSION, f"the topic[{new_topic}] sending message is forbidden")

    # positional (topic, body, queue_id, flag, properties, sys_flag, born_timestamp,
    # born_host, store_timestamp, store_host, reconsume_times), as send_message does
    rec = MessageRecord(new_topic, old.body, queue_id, old.flag, props, old.sys_flag, old.born_timestamp,
                        old.born_host, 0, old.store_host, decision.attempt)
    kind = EventKind.DEAD_LETTERED if to_dlq else EventKind.SENT_BACK
    res = core.put_message(rec, kind=kind, group=group, delay_level=None if to_dlq else level)
    ok = res.status is PutStatus.PUT_OK
    if core.has_send_back_hooks:
        core.run_send_back_hooks(ConsumeMessageContext(
            group, origin_topic or props.get(Prop.RETRY_TOPIC), origin_msg_id, offset,
            "SEND_BACK_TO_DLQ" if to_dlq else "SEND_BACK", ok, rec.reconsume_times, level, new_topic))
    if not ok:
        return request.response(RC.SYSTEM_ERROR, res.remark or res.status.name)
    return request.response(RC.SUCCESS)
