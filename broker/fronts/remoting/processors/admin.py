"""UPDATE_AND_CREATE_TOPIC (17), UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200),
UPDATE_BROKER_CONFIG (25, brokerPermission), and the emulator's clock control
(EMULATOR_CLOCK_ADVANCE) and broker control (EMULATOR_BROKER_CONTROL)."""
from __future__ import annotations

import json

from rocketmq_emulator.delay_scheduler import DelayLevelError, parse_duration

from ....errors import ClockError
from ....rocketmq_model.message_types import apply_attribute_changes
from ..protocol import ResponseCode as RC
from ....rocketmq_model.topics import TopicConfig, validate_topic_name

__all__ = ["update_and_create_topic", "update_and_create_subscription_group", "clock_advance",
           "update_broker_config", "broker_control"]


def update_and_create_topic(front, request, channel):
    """The header as a TopicConfig for BrokerCore.update_topic (4.9.8's checks, written
    before the reply: a write that fails answers SYSTEM_ERROR, so SUCCESS always means
    persisted)."""
    core = front.core
    topic = request.header_str("topic")
    validate_topic_name(topic)          # before the other fields, as 4.x reports it
    # 5.x's attributes: "+message.type=FIFO" sets the topic's message type (mqadmin
    # updateTopic -a); without the header the topic keeps the attributes it has
    existing = core.topic_config(topic)
    attributes = apply_attribute_changes(existing.attributes if existing else {}, request.header("attributes"),
                                         create=existing is None)
    config = TopicConfig(topic, request.header_int("readQueueNums", 8), request.header_int("writeQueueNums", 8),
                         request.header_int("perm", 6), request.header("topicFilterType") or "SINGLE_TAG",
                         request.header_int("topicSysFlag", 0), request.header_bool("order"), attributes)
    failure = core.update_topic(config)
    if failure is not None:
        return request.response(RC.SYSTEM_ERROR, f"the topic[{topic}] was not changed: its config cannot be "
                                                  f"written ({failure})")
    # The emulator's addition (mqadmin reads no body here): the topic's config before
    # (null: it is new) and after, so `topic create` can say what it did.
    after = core.topic_config(topic)
    return request.response(RC.SUCCESS, body=json.dumps({"before": existing.to_json() if existing else None,
                                                         "after": after.to_json()}).encode())


def update_and_create_subscription_group(front, request, channel):
    """The body is a SubscriptionGroupConfig in JSON (mqadmin updateSubGroup), read as
    fastjson reads it (numbers and booleans also as strings, unknown fields ignored);
    written before the reply, as a topic is."""
    core = front.core
    from ....rocketmq_model.groups import SubscriptionGroupConfig, validate_group_name
    from ..protocol import RequestRefused
    from ..protocol.fastjson import loads_fastjson

    try:
        config = SubscriptionGroupConfig.from_json(loads_fastjson(request.body or b""))
    except ValueError as exc:           # not JSON, or a field fastjson would not read (named)
        raise RequestRefused(f"the body is not a subscription group config: {exc}") from None
    validate_group_name(config.group_name)
    if not 0 <= config.retry_max_times <= 10_000 or not 0 <= config.retry_queue_nums <= 1024:
        raise RequestRefused(f"retryMaxTimes must be 0..10000 and retryQueueNums 0..1024, got "
                             f"{config.retry_max_times} and {config.retry_queue_nums}")
    failure = core.update_group(config)
    if failure is not None:
        return request.response(RC.SYSTEM_ERROR, f"the group[{config.group_name}] was not changed: its config "
                                                  f"cannot be written ({failure})")
    return request.response(RC.SUCCESS)


def clock_advance(front, request, channel):
    """Header ``duration`` ("500ms", "10s", "2h", or "next": to the next due delayed
    message or retry of any running broker) or ``millis``. Replies once every message due
    by the new time has been re-stored and waiting pulls answered, with ``nowMillis``,
    ``advancedMillis`` and ``clock`` (virtual, or real for an advance of 0 on a real clock)."""
    core = front.core
    text = request.header("duration")
    virtual = getattr(core.clock, "is_virtual", False)
    if text == "next":
        from ....cluster import live_members, next_due_ms

        due = next_due_ms(live_members(core)) if virtual else None
        if virtual and due is None:
            return request.response(RC.SYSTEM_ERROR, "no message is waiting for a delay or a retry: there is no next "
                                                     "due time to advance to")
        ms = max(due - core.clock.now_ms(), 0) if due is not None else 1
    else:
        try:
            ms = parse_duration(text) if text else request.header_int("millis")
        except DelayLevelError as exc:
            return request.response(RC.SYSTEM_ERROR, str(exc))
        if ms < 0:
            return request.response(RC.SYSTEM_ERROR, f"durations are positive (the clock only moves forward), "
                                                     f"got {text or ms}")
    if ms == 0 and not virtual:
        # An advance of nothing only reads the clock (`clock now`): a real clock answers too.
        return request.response(RC.SUCCESS, None, {"nowMillis": core.clock.now_ms(), "clock": "real",
                                                   "advancedMillis": 0})
    try:
        before = core.clock.now_ms()
        now = core.advance_cluster_clock(ms)
    except ClockError as exc:
        return request.response(RC.SYSTEM_ERROR, str(exc))
    # A move of time someone asked for is written before the reply: what it delivered
    # and (serve) the clock's new time survive a kill right after it.
    core.flush_cluster()
    return request.response(RC.SUCCESS, None, {"nowMillis": now, "clock": "virtual", "advancedMillis": now - before})


def update_broker_config(front, request, channel):
    """mqadmin updateBrokerConfig: the body is properties text (``key=value`` lines).
    brokerPermission is honoured (6 read+write, 4 read only, 2 write only): routes carry
    it from the reply on, as upstream's re-registration does; other keys are refused
    by name rather than silently kept."""
    core = front.core
    from ....config import parse_properties
    from ....errors import ConfigError
    from ..protocol import RequestRefused

    try:
        props = parse_properties((request.body or b"").decode("utf-8", "replace"))
    except ConfigError as exc:          # (SYSTEM_ERROR, as the Java broker's string2Properties failing)
        raise RequestRefused(f"the body is not broker config properties text: {exc}") from None
    unknown = sorted(k for k in props if k != "brokerPermission")
    if unknown or not props:
        raise RequestRefused(f"this broker changes only brokerPermission at run time, not "
                             f"{', '.join(unknown) or 'an empty config'}")
    try:
        core.set_broker_permission(int(props["brokerPermission"]))
    except ValueError as exc:
        raise RequestRefused(f"brokerPermission: {exc}") from None
    return request.response(RC.SUCCESS)


def broker_control(front, request, channel):
    """Header ``action``: list (body: every broker as JSON), write (``value`` on/off),
    stop or start ``brokerName``. A single broker is a cluster of one."""
    core = front.core
    import json

    from ....cluster import ClusterError

    names = core.cluster()
    action, name = request.header("action"), request.header("brokerName")
    try:
        if action == "write":
            value = request.header("value")
            if value not in ("on", "off"):
                return request.response(RC.SYSTEM_ERROR, f"write is on or off, not {value!r}")
            names.set_write(name, value == "on")
        elif action == "stop":
            names.stop(name)
        elif action == "start":
            names.start(name)
        elif action != "list":
            return request.response(RC.SYSTEM_ERROR, f"unknown broker action {action!r}")
    except ClusterError as exc:
        return request.response(RC.SYSTEM_ERROR, str(exc))
    except OSError as exc:
        return request.response(RC.SYSTEM_ERROR, f"cannot start {name}: {exc.strerror or exc}")
    states = [{"brokerName": b.name, "address": b.address, "up": b.up, "brokerPermission": b.permission,
               "topics": b.topics} for b in names.states()]
    return request.response(RC.SUCCESS, body=json.dumps(states).encode())
