"""UPDATE_AND_CREATE_TOPIC (17) and the emulator's clock control (EMULATOR_CLOCK_ADVANCE)."""
from __future__ import annotations

from rocketmq_emulator.delay_scheduler import DelayLevelError, parse_duration

from ..errors import ClockError
from ..protocol import ResponseCode as RC
from ..topics import TopicConfig, TopicNameError, validate_topic_name

__all__ = ["update_and_create_topic", "clock_advance"]


def update_and_create_topic(core, request, channel):
    topic = request.header_str("topic")
    try:
        validate_topic_name(topic)
    except TopicNameError as exc:
        return request.response(RC.SYSTEM_ERROR, str(exc))
    if topic == core.config.broker_cluster_name:
        return request.response(RC.SYSTEM_ERROR, f"the topic[{topic}] is conflict with system reserved words.")
    core.topics.put(TopicConfig(
        topic, request.header_int("readQueueNums", 8), request.header_int("writeQueueNums", 8),
        request.header_int("perm", 6), request.header("topicFilterType") or "SINGLE_TAG",
        request.header_int("topicSysFlag", 0), request.header_bool("order")))
    return request.response(RC.SUCCESS)


def clock_advance(core, request, channel):
    """Header ``duration`` ("500ms", "10s", "2h") or ``millis``. Replies once every
    message due by the new time has been re-stored and waiting pulls answered."""
    text = request.header("duration")
    try:
        ms = parse_duration(text) if text else request.header_int("millis")
    except DelayLevelError as exc:
        return request.response(RC.SYSTEM_ERROR, str(exc))
    try:
        now = core.advance_clock(ms)
    except ClockError as exc:
        return request.response(RC.SYSTEM_ERROR, str(exc))
    return request.response(RC.SUCCESS, None, {"nowMillis": now})
