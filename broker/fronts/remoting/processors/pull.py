"""PULL_MESSAGE (11), the 4.x front of the core's pull (broker/rocketmq_model/pulling.py): the header
read into a PullRequest, the outcome mapped to 4.x codes, long polling (the reply of a
held pull comes later)."""
from __future__ import annotations

from ..protocol import ResponseCode as RC
from ..protocol.typed import FLAG_SUSPEND, PULL_CODES, pull_request_of

__all__ = ["pull_message", "pull_response"]





def pull_message(front, request, channel):
    """PULL_MESSAGE: the core's pull as a 4.x reply; with FLAG_SUSPEND a pull that found
    nothing is held (None: the reply comes later, from the front's take_outgoing)."""
    req = pull_request_of(request, allow_suspend=True)
    suspend_ms = request.header_int("suspendTimeoutMillis", 15000)
    if request.header_int("sysFlag") & FLAG_SUSPEND:
        result = front.core.pull_or_hold(req, channel, suspend_ms, request)
        return None if result is None else pull_response(request, result)
    return pull_response(request, front.core.pull(req, channel))


def pull_response(request, result):
    """The 4.x reply to PULL_MESSAGE ``request`` for the core's ``result``."""
    code = PULL_CODES[result.outcome]
    # Every pull reply carries all four header fields: the Java client unboxes them.
    header = {"suggestWhichBrokerId": 0, "nextBeginOffset": result.next_offset,
              "minOffset": result.min_offset, "maxOffset": result.max_offset}
    if result.outcome.refused:
        return request.response(code, result.remark, header)
    return request.response(code, None if code == RC.SUCCESS else result.store_status, header,
                            body=b"".join(result.records) if code == RC.SUCCESS else b"")
