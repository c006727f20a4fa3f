"""Consumer offsets and queue offsets: QUERY/UPDATE_CONSUMER_OFFSET (14/15),
GET_MAX/MIN_OFFSET (30/31), SEARCH_OFFSET_BY_TIMESTAMP (29), GET_EARLIEST_MSG_STORETIME (32):
the 4.x front of the core's offset operations (BrokerCore.committed_offset,
commit_offset, queue_bounds, offset_at_time, earliest_store_time)."""
from __future__ import annotations

from ....rocketmq_model.groups import validate_group_name
from ....operations import CommitOutcome, OffsetCommit
from ..protocol import ResponseCode as RC

__all__ = ["query_consumer_offset", "update_consumer_offset", "get_max_offset", "get_min_offset",
           "search_offset_by_timestamp", "get_earliest_msg_storetime"]


def query_consumer_offset(front, request, channel):
    core = front.core
    group = validate_group_name(request.header_str("consumerGroup"))
    offset = core.committed_offset(group, request.header_str("topic"), request.header_int("queueId"))
    if offset is not None:
        return request.response(RC.SUCCESS, None, {"offset": offset})
    return request.response(RC.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")


def update_consumer_offset(front, request, channel):
    core = front.core
    group = validate_group_name(request.header_str("consumerGroup"))
    topic = request.header_str("topic")
    outcome = core.commit_offset(OffsetCommit(group, topic, request.header_int("queueId"),
                                              request.header_int("commitOffset")))
    if outcome is CommitOutcome.TOPIC_NOT_EXIST:
        return request.response(RC.TOPIC_NOT_EXIST, f"Topic {topic} not exist!")
    if outcome is CommitOutcome.GROUP_NOT_EXIST:
        return request.response(RC.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group {group} not exist!")
    return request.response(RC.SUCCESS)


def get_max_offset(front, request, channel):
    core = front.core
    return request.response(RC.SUCCESS, None, {"offset": core.queue_bounds(
        request.header_str("topic"), request.header_int("queueId"))[1]})


def get_min_offset(front, request, channel):
    core = front.core
    return request.response(RC.SUCCESS, None, {"offset": core.queue_bounds(
        request.header_str("topic"), request.header_int("queueId"))[0]})


def search_offset_by_timestamp(front, request, channel):
    core = front.core
    return request.response(RC.SUCCESS, None, {"offset": core.offset_at_time(
        request.header_str("topic"), request.header_int("queueId"), request.header_int("timestamp"))})


def get_earliest_msg_storetime(front, request, channel):
    core = front.core
    return request.response(RC.SUCCESS, None, {"timestamp": core.earliest_store_time(
        request.header_str("topic"), request.header_int("queueId"))})
