"""UPDATE_AND_CREATE_TOPIC (17) and the emulator's clock control (EMULATOR_CLOCK_ADVANCE)."""
from __future__ import annotations

from rocketmq_emulator.delay_scheduler import DelayLevelError, parse_duration

from ..errors import ClockError
from ..protocol import ResponseCode as RC
from ..topics import TopicConfig, validate_topic_name

__all__ = ["update_and_create_topic", "clock_advance"]


def update_and_create_topic(core, request, channel):
    """The header as a TopicConfig for BrokerCore.update_topic (4.9.8's checks, written
    before the reply: a write that fails answers SYSTEM_ERROR, so SUCCESS always means
    persisted)."""
    topic = request.header_str("topic")
    validate_topic_name(topic)          # before the other fields, as 4.x reports it
    config = TopicConfig(topic, request.header_int("readQueueNums", 8), request.header_int("writeQueueNums", 8),
                         request.header_int("perm", 6), request.header("topicFilterType") or "SINGLE_TAG",
                         request.header_int("topicSysFlag", 0), request.header_bool("order"))
    failure = core.update_topic(config)
    if failure is not None:
        return request.response(RC.SYSTEM_ERROR, f"the topic[{topic}] was not changed: its config cannot be "
                                                  f"written ({failure})")
    return request.response(RC.SUCCESS)


def clock_advance(core, request, channel):
    """Header ``duration`` ("500ms", "10s", "2h") or ``millis``. Replies once every
    message due by the new time has been re-stored and waiting pulls answered, with
    ``nowMillis`` and ``clock`` (virtual, or real for an advance of 0 on a real clock)."""
    text = request.header("duration")
    try:
        ms = parse_duration(text) if text else request.header_int("millis")
    except DelayLevelError as exc:
        return request.response(RC.SYSTEM_ERROR, str(exc))
    if ms == 0 and not getattr(core.clock, "is_virtual", False):
        # An advance of nothing only reads the clock (`clock now`): a real clock answers too.
        return request.response(RC.SUCCESS, None, {"nowMillis": core.clock.now_ms(), "clock": "real"})
    try:
        now = core.advance_clock(ms)
    except ClockError as exc:
        return request.response(RC.SYSTEM_ERROR, str(exc))
    # A move of time someone asked for is written before the reply: what it delivered
    # and (serve) the clock's new time survive a kill right after it.
    core.flush()
    return request.response(RC.SUCCESS, None, {"nowMillis": now, "clock": "virtual"})
