"""VIEW_MESSAGE_BY_ID (33) and QUERY_MESSAGE (12): raw records as the body."""
from __future__ import annotations

from ..protocol import ResponseCode as RC

__all__ = ["view_message_by_id", "query_message"]


def view_message_by_id(front, request, channel):
    core = front.core
    offset = request.header_int("offset")
    raw = core.message_at(offset)
    if raw is None:
        return request.response(RC.SYSTEM_ERROR, f"can not find message by the offset, {offset}")
    return request.response(RC.SUCCESS, body=raw)


def query_message(front, request, channel):
    core = front.core
    topic = request.header_str("topic")
    key = request.header_str("key")
    max_num = request.header_int("maxNum")
    if request.header_bool("_UNIQUE_KEY_QUERY"):
        max_num = core.config.default_query_max_num
    begin = request.header_int("beginTimestamp")
    end = request.header_int("endTimestamp")
    found = core.messages_by_key(topic, key, max_num, begin, end)
    if not found:
        return request.response(RC.QUERY_NOT_FOUND, "can not find message, maybe time range not correct")
    return request.response(RC.SUCCESS, None, {
        "indexLastUpdateTimestamp": core.clock.now_ms(),
        "indexLastUpdatePhyoffset": core.commit_log_bounds()[1]}, body=b"".join(found))
