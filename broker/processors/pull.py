"""PULL_MESSAGE (11), the 4.x front of the core's pull (broker/pulling.py): the header
read into a PullRequest, the outcome mapped to 4.x codes, long polling (the reply of a
held pull comes later)."""
from __future__ import annotations

from ..operations import PullOutcome as O, PullRequest
from ..protocol import ResponseCode as RC

__all__ = ["pull_message", "pull_response", "pull_request_of", "FLAG_COMMIT_OFFSET", "FLAG_SUSPEND",
           "FLAG_SUBSCRIPTION"]

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
FLAG_CLASS_FILTER = 0x8

# The 4.x response code of each outcome of the core's pull.
_CODES = {
    O.FOUND: RC.SUCCESS,
    O.NO_NEW_MESSAGE: RC.PULL_NOT_FOUND,
    O.RETRY_IMMEDIATELY: RC.PULL_RETRY_IMMEDIATELY,
    O.OFFSET_MOVED: RC.PULL_OFFSET_MOVED,
    O.BROKER_NOT_READABLE: RC.NO_PERMISSION,
    O.GROUP_NOT_EXIST: RC.SUBSCRIPTION_GROUP_NOT_EXIST,
    O.GROUP_NOT_CONSUMABLE: RC.NO_PERMISSION,
    O.TOPIC_NOT_EXIST: RC.TOPIC_NOT_EXIST,
    O.TOPIC_NOT_READABLE: RC.NO_PERMISSION,
    O.QUEUE_ILLEGAL: RC.SYSTEM_ERROR,
    O.SUBSCRIPTION_PARSE_FAILED: RC.SUBSCRIPTION_PARSE_FAILED,
    O.SUBSCRIPTION_NOT_EXIST: RC.SUBSCRIPTION_NOT_EXIST,
    O.BROADCAST_FORBIDDEN: RC.NO_PERMISSION,
    O.SUBSCRIPTION_NOT_LATEST: RC.SUBSCRIPTION_NOT_LATEST,
    O.FILTER_UNSUPPORTED: RC.SYSTEM_ERROR,
}


def pull_message(front, request, channel):
    """PULL_MESSAGE: the core's pull as a 4.x reply; with FLAG_SUSPEND a pull that found
    nothing is held (None: the reply comes later, from the front's take_outgoing)."""
    req = pull_request_of(request, allow_suspend=True)
    suspend_ms = request.header_int("suspendTimeoutMillis", 15000)
    if request.header_int("sysFlag") & FLAG_SUSPEND:
        result = front.core.pull_or_hold(req, channel, suspend_ms, request)
        return None if result is None else pull_response(request, result)
    return pull_response(request, front.core.pull(req, channel))


def pull_request_of(request, *, allow_suspend: bool) -> PullRequest:
    """The core's PullRequest for a PULL_MESSAGE command (its header, as 4.9.8 reads
    it: the subscription only with FLAG_SUBSCRIPTION, the commit only with
    FLAG_COMMIT_OFFSET and never for a held pull's second run)."""
    # (read in the order 4.x reads them: the first missing field is the one reported)
    group = request.header_str("consumerGroup")
    topic = request.header_str("topic")
    queue_id = request.header_int("queueId")
    offset = request.header_int("queueOffset")
    max_msgs = request.header_int("maxMsgNums")
    sys_flag = request.header_int("sysFlag")
    commit_offset = request.header_int("commitOffset", 0)
    sub_version = request.header_int("subVersion", 0)
    with_sub = sys_flag & FLAG_SUBSCRIPTION
    return PullRequest(group, topic, queue_id, offset, max_msgs,
                       (request.header("subscription") or "") if with_sub else None,
                       (request.header("expressionType") or "TAG") if with_sub else "TAG",
                       sub_version, commit_offset if allow_suspend and sys_flag & FLAG_COMMIT_OFFSET else None)


def pull_response(request, result):
    """The 4.x reply to PULL_MESSAGE ``request`` for the core's ``result``."""
    code = _CODES[result.outcome]
    # Every pull reply carries all four header fields: the Java client unboxes them.
    header = {"suggestWhichBrokerId": 0, "nextBeginOffset": result.next_offset,
              "minOffset": result.min_offset, "maxOffset": result.max_offset}
    if result.outcome.refused:
        return request.response(code, result.remark, header)
    return request.response(code, None if code == RC.SUCCESS else result.store_status, header,
                            body=b"".join(result.records) if code == RC.SUCCESS else b"")
