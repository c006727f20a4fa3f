"""PULL_MESSAGE (11), with 4.9.8's checks in order, store results mapped to codes, the
piggy-backed offset commit and long polling (the reply of a held pull comes later)."""
from __future__ import annotations

from rocketmq_emulator.store import GetStatus

from ..groups import parse_tag_expression
from ..long_polling import HeldPull
from ..protocol import ResponseCode as RC

__all__ = ["pull_message", "run_pull", "FLAG_COMMIT_OFFSET", "FLAG_SUSPEND", "FLAG_SUBSCRIPTION"]

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
FLAG_CLASS_FILTER = 0x8

_CODES = {
    GetStatus.FOUND: RC.SUCCESS,
    GetStatus.NO_MATCHED_MESSAGE: RC.PULL_RETRY_IMMEDIATELY,
    GetStatus.MESSAGE_WAS_REMOVING: RC.PULL_RETRY_IMMEDIATELY,
    GetStatus.OFFSET_FOUND_NULL: RC.PULL_NOT_FOUND,
    GetStatus.OFFSET_OVERFLOW_ONE: RC.PULL_NOT_FOUND,
    GetStatus.OFFSET_OVERFLOW_BADLY: RC.PULL_OFFSET_MOVED,
    GetStatus.OFFSET_TOO_SMALL: RC.PULL_OFFSET_MOVED,
}


def pull_message(core, request, channel):
    return run_pull(core, request, channel, allow_suspend=True)


def _fail(core, request, topic, queue_id, code, remark):
    # Every pull reply carries all four header fields: the Java client unboxes them.
    return request.response(code, remark, {
        "suggestWhichBrokerId": 0, "nextBeginOffset": 0,
        "minOffset": core.store.min_offset(topic, queue_id) if topic else 0,
        "maxOffset": core.store.max_offset(topic, queue_id) if topic else 0})


def run_pull(core, request, channel, *, allow_suspend: bool):
    group = request.header_str("consumerGroup")
    topic = request.header_str("topic")
    queue_id = request.header_int("queueId")
    offset = request.header_int("queueOffset")
    max_msgs = request.header_int("maxMsgNums")
    sys_flag = request.header_int("sysFlag")
    commit_offset = request.header_int("commitOffset", 0)
    suspend_ms = request.header_int("suspendTimeoutMillis", 15000)
    sub_version = request.header_int("subVersion", 0)

    if not core.readable:
        return _fail(core, request, topic, queue_id, RC.NO_PERMISSION,
                     f"the broker[{core.config.broker_ip}] pulling message is forbidden")
    gc = core.groups.find(group)
    if gc is None:
        return _fail(core, request, topic, queue_id, RC.SUBSCRIPTION_GROUP_NOT_EXIST,
                     f"subscription group [{group}] does not exist")
    if not gc.consume_enable:
        return _fail(core, request, topic, queue_id, RC.NO_PERMISSION, f"subscription group no permission, {group}")
    tc = core.topics.get(topic)
    if tc is None:
        return _fail(core, request, topic, queue_id, RC.TOPIC_NOT_EXIST,
                     f"topic[{topic}] not exist, apply first please!")
    if not tc.readable:
        return _fail(core, request, topic, queue_id, RC.NO_PERMISSION,
                     f"the topic[{topic}] pulling message is forbidden")
    if queue_id < 0 or queue_id >= tc.read_queue_nums:
        return _fail(core, request, topic, queue_id, RC.SYSTEM_ERROR,
                     f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                     f"[{tc.read_queue_nums}] consumer:[{channel.remote}]")
    if sys_flag & FLAG_SUBSCRIPTION:
        try:
            _, code_set = parse_tag_expression(request.header("subscription"))
        except ValueError:
            return _fail(core, request, topic, queue_id, RC.SUBSCRIPTION_PARSE_FAILED,
                         "parse the consumer's subscription failed")
        expression_type = request.header("expressionType") or "TAG"
    else:
        info = core.consumers.get(group)
        if info is None:
            return _fail(core, request, topic, queue_id, RC.SUBSCRIPTION_NOT_EXIST,
                         f"the consumer's group info not exist")
        if info.message_model == "BROADCASTING" and not gc.consume_broadcast_enable:
            return _fail(core, request, topic, queue_id, RC.NO_PERMISSION,
                         f"the consumer group[{group}] can not consume by broadcast way")
        sub = info.subscriptions.get(topic)
        if sub is None:
            return _fail(core, request, topic, queue_id, RC.SUBSCRIPTION_NOT_EXIST,
                         "the consumer's subscription not exist")
        if sub.sub_version < sub_version:
            return _fail(core, request, topic, queue_id, RC.SUBSCRIPTION_NOT_LATEST,
                         "the consumer's subscription not latest")
        code_set, expression_type = sub.code_set, sub.expression_type
    if expression_type != "TAG":
        return _fail(core, request, topic, queue_id, RC.SYSTEM_ERROR,
                     "The broker does not support consumer to filter message by " + expression_type)

    res = core.store.get_message(topic, queue_id, offset, max_msgs, code_set)
    status = res.status
    if status in (GetStatus.NO_MESSAGE_IN_QUEUE, GetStatus.NO_MATCHED_LOGIC_QUEUE):
        code = RC.PULL_OFFSET_MOVED if offset != 0 else RC.PULL_NOT_FOUND
    else:
        code = _CODES.get(status, RC.PULL_NOT_FOUND)
    response = request.response(code, None if code == RC.SUCCESS else status.name, {
        "suggestWhichBrokerId": 0, "nextBeginOffset": res.next_begin_offset,
        "minOffset": res.min_offset, "maxOffset": res.max_offset},
        body=res.body if code == RC.SUCCESS else b"")

    if allow_suspend and sys_flag & FLAG_COMMIT_OFFSET:
        core.record_offset_commit(group, topic, queue_id, commit_offset)
    if code == RC.PULL_NOT_FOUND and allow_suspend and sys_flag & FLAG_SUSPEND:
        wait = suspend_ms if core.config.long_polling_enable else core.config.short_polling_time_mills
        core.holds.hold(HeldPull(channel, request, topic, queue_id, offset, code_set,
                                 core.clock.now_ms() + wait))
        return None
    return response
