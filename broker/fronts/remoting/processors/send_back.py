"""CONSUMER_SEND_MSG_BACK (36), exactly as 4.9.8's asyncConsumerSendMsgBack: the 4.x
front of BrokerCore.send_back (broker/rocketmq_model/sending.py).

Order of checks: group (auto-created by default) → broker writeable → retryQueueNums
<= 0 means success with nothing stored → %RETRY%<group> created/fetched → message
looked up by commit-log offset → the retry lifecycle's 4.x decision
(retry_lifecycle.rocketmq4_send_back: DLQ when reconsumeTimes >= max or delayLevel < 0,
else level = delayLevel or 3 + reconsumeTimes, and the copy's properties). The copy
keeps body, flag, sysFlag, born time/host and store host, with reconsumeTimes + 1.
"""
from __future__ import annotations

from ....operations import SendBack
from ..protocol import ResponseCode as RC
from ..protocol.typed import send_back_code

__all__ = ["consumer_send_msg_back"]


def consumer_send_msg_back(front, request, channel):
    """The header as the core's SendBack (the 4.x version rule for a client's
    maxReconsumeTimes stays here), the outcome as a 4.x reply."""
    core = front.core
    offset = request.header_int("offset")
    group = request.header_str("group")
    delay_level = request.header_int("delayLevel")
    origin_msg_id = request.header("originMsgId")
    origin_topic = request.header("originTopic")
    # a nullable Integer, read only from clients of V3_4_9 on (version 121)
    max_times = None
    if request.version >= 121 and request.header("maxReconsumeTimes") not in (None, ""):
        max_times = request.header_int("maxReconsumeTimes")
    result = core.send_back(SendBack(group, offset, delay_level, max_times, origin_msg_id, origin_topic))
    code = send_back_code(result)
    return request.response(code, None if code == RC.SUCCESS else result.remark)
