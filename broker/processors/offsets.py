"""Consumer offsets and queue offsets: QUERY/UPDATE_CONSUMER_OFFSET (14/15),
GET_MAX/MIN_OFFSET (30/31), SEARCH_OFFSET_BY_TIMESTAMP (29), GET_EARLIEST_MSG_STORETIME (32)."""
from __future__ import annotations

from ..groups import validate_group_name
from ..protocol import ResponseCode as RC

__all__ = ["query_consumer_offset", "update_consumer_offset", "get_max_offset", "get_min_offset",
           "search_offset_by_timestamp", "get_earliest_msg_storetime"]


def query_consumer_offset(core, request, channel):
    group = validate_group_name(request.header_str("consumerGroup"))
    topic = request.header_str("topic")
    queue_id = request.header_int("queueId")
    stored = core.store.query_offset(group, topic, queue_id)
    if stored >= 0:
        return request.response(RC.SUCCESS, None, {"offset": stored})
    # 4.x: nothing stored and offset 0 still resident (an empty queue counts) → 0.
    if core.store.min_offset(topic, queue_id) <= 0:
        return request.response(RC.SUCCESS, None, {"offset": 0})
    return request.response(RC.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")


def update_consumer_offset(core, request, channel):
    group = validate_group_name(request.header_str("consumerGroup"))
    topic = request.header_str("topic")
    queue_id = request.header_int("queueId")
    offset = request.header_int("commitOffset")
    # Validated as 5.x does, so a typo in a group or topic is an error, not a silent row.
    if core.topics.get(topic) is None:
        return request.response(RC.TOPIC_NOT_EXIST, f"Topic {topic} not exist!")
    if core.groups.find(group, auto_create=False) is None:
        return request.response(RC.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group {group} not exist!")
    core.record_offset_commit(group, topic, queue_id, offset)
    return request.response(RC.SUCCESS)


def get_max_offset(core, request, channel):
    return request.response(RC.SUCCESS, None, {"offset": core.store.max_offset(
        request.header_str("topic"), request.header_int("queueId"))})


def get_min_offset(core, request, channel):
    return request.response(RC.SUCCESS, None, {"offset": core.store.min_offset(
        request.header_str("topic"), request.header_int("queueId"))})


def search_offset_by_timestamp(core, request, channel):
    return request.response(RC.SUCCESS, None, {"offset": core.store.offset_by_time(
        request.header_str("topic"), request.header_int("queueId"), request.header_int("timestamp"))})


def get_earliest_msg_storetime(core, request, channel):
    topic, qid = request.header_str("topic"), request.header_int("queueId")
    entry = core.store.queue_entry(topic, qid, core.store.min_offset(topic, qid))
    rec = core.store.look_message_by_offset(entry[0]) if entry else None
    return request.response(RC.SUCCESS, None, {"timestamp": rec.store_timestamp if rec else -1})
