"""The 4.x dialect of the core's typed operations, one definition for both ends: the
typed request a PULL_MESSAGE command carries, the 4.x response code of each outcome (send,
send-back, pull), the route JSON of a typed route. The remoting front answers with them;
the SDK's in-process transport, which calls the core's typed operations directly, reads
the same codes and routes a TCP client would."""
from __future__ import annotations

from rocketmq_emulator.store import PutStatus
from rocketmq_emulator.store.records import properties_to_string

from ....operations import (
    FilterCheck,
    OffsetCommit,
    PullOutcome,
    PullRequest,
    SendBack,
    SendBackOutcome,
    SendOutcome,
    SendRequest,
)
from .codes import ResponseCode as RC

__all__ = ["PullRequest", "pull_request_of", "PULL_CODES", "FILTER_CHECK_CODES", "SEND_CODES", "SEND_BACK_CODES", "PUT_STATUS_TO_CODE",
           "send_code", "send_back_code", "route_data", "broker_data", "FLAG_COMMIT_OFFSET", "FLAG_SUSPEND",
           "FLAG_SUBSCRIPTION", "FLAG_CLASS_FILTER", "SUCCESS"]

SUCCESS = int(RC.SUCCESS)   # a plain int: the header encoder's fast path takes exact ints

# PULL_MESSAGE's sysFlag bits
FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
FLAG_CLASS_FILTER = 0x8

# The 4.x response code of each outcome of the core's pull.
PULL_CODES = {
    PullOutcome.FOUND: RC.SUCCESS,
    PullOutcome.NO_NEW_MESSAGE: RC.PULL_NOT_FOUND,
    PullOutcome.RETRY_IMMEDIATELY: RC.PULL_RETRY_IMMEDIATELY,
    PullOutcome.OFFSET_MOVED: RC.PULL_OFFSET_MOVED,
    PullOutcome.BROKER_NOT_READABLE: RC.NO_PERMISSION,
    PullOutcome.GROUP_NOT_EXIST: RC.SUBSCRIPTION_GROUP_NOT_EXIST,
    PullOutcome.GROUP_NOT_CONSUMABLE: RC.NO_PERMISSION,
    PullOutcome.TOPIC_NOT_EXIST: RC.TOPIC_NOT_EXIST,
    PullOutcome.TOPIC_NOT_READABLE: RC.NO_PERMISSION,
    PullOutcome.QUEUE_ILLEGAL: RC.SYSTEM_ERROR,
    PullOutcome.SUBSCRIPTION_PARSE_FAILED: RC.SUBSCRIPTION_PARSE_FAILED,
    PullOutcome.SUBSCRIPTION_NOT_EXIST: RC.SUBSCRIPTION_NOT_EXIST,
    PullOutcome.BROADCAST_FORBIDDEN: RC.NO_PERMISSION,
    PullOutcome.SUBSCRIPTION_NOT_LATEST: RC.SUBSCRIPTION_NOT_LATEST,
    PullOutcome.FILTER_DATA_NOT_EXIST: RC.FILTER_DATA_NOT_EXIST,
    PullOutcome.FILTER_UNSUPPORTED: RC.SYSTEM_ERROR,
}

# CHECK_CLIENT_CONFIG's code of each outcome of the core's check_filter
FILTER_CHECK_CODES = {FilterCheck.ACCEPTED: RC.SUCCESS, FilterCheck.UNSUPPORTED: RC.SYSTEM_ERROR,
                      FilterCheck.ILLEGAL: RC.SUBSCRIPTION_PARSE_FAILED}


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


def pull_header_of(request: PullRequest, suspend_ms: int, broker_name: str | None) -> dict:
    """The PULL_MESSAGE header carrying the typed ``request`` (what ``pull_request_of``
    reads back): a client's one pull, on any transport. Suspended for ``suspend_ms``;
    ``bname``: the broker it is aimed at."""
    sys_flag = FLAG_SUSPEND
    if request.commit_offset is not None:
        sys_flag |= FLAG_COMMIT_OFFSET
    if request.subscription is not None:
        sys_flag |= FLAG_SUBSCRIPTION
    header = {"consumerGroup": request.group, "topic": request.topic, "queueId": request.queue_id,
              "queueOffset": request.offset, "maxMsgNums": request.max_msgs, "sysFlag": sys_flag,
              "commitOffset": request.commit_offset or 0, "suspendTimeoutMillis": suspend_ms,
              "subVersion": request.sub_version, "expressionType": request.expression_type, "bname": broker_name}
    if request.subscription is not None:
        header["subscription"] = request.subscription
    return header


def send_header_of(request: SendRequest, broker_name: str | None) -> dict[str, str]:
    """SEND_MESSAGE_V2's header (SendMessageRequestHeaderV2, short names, values as
    strings) carrying the typed ``request``: a client's one send, on any transport.
    The reconsume counts of a send to a retry topic travel in the header as well as in
    the properties (sendKernelImpl's upstream quirk); ``n``: the broker it is aimed at."""
    ext = {"a": request.producer_group, "b": request.topic, "c": request.default_topic,
           "d": str(request.default_topic_queue_nums), "e": str(request.queue_id), "f": str(request.sys_flag),
           "g": str(request.born_timestamp), "h": str(request.flag),
           "i": properties_to_string(request.properties or {}), "j": str(request.reconsume_times), "k": "false",
           "m": "false", "n": broker_name}
    if request.max_reconsume_times is not None:
        ext["l"] = str(request.max_reconsume_times)
    return ext


def send_back_header_of(request: SendBack, broker_name: str | None) -> dict:
    """CONSUMER_SEND_MSG_BACK's header (ConsumerSendMsgBackRequestHeader) carrying the
    typed ``request``; ``bname``: the broker it is aimed at."""
    return {"offset": request.commit_log_offset, "group": request.group, "delayLevel": request.delay_level,
            "originMsgId": request.origin_msg_id, "originTopic": request.origin_topic, "unitMode": False,
            "maxReconsumeTimes": request.max_reconsume_times, "bname": broker_name}


def offset_commit_header_of(commit: OffsetCommit, broker_name: str | None) -> dict:
    """UPDATE_CONSUMER_OFFSET's header carrying the typed ``commit``."""
    return {"consumerGroup": commit.group, "topic": commit.topic, "queueId": commit.queue_id,
            "commitOffset": commit.offset, "bname": broker_name}


# The 4.x response code of each outcome of the core's send (STORE_REFUSED: by PutStatus).
SEND_CODES = {
    SendOutcome.BROKER_NOT_WRITEABLE: RC.NO_PERMISSION,
    SendOutcome.TOPIC_ILLEGAL: RC.SYSTEM_ERROR,
    SendOutcome.TOPIC_NOT_ALLOWED: RC.NO_PERMISSION,
    SendOutcome.TOPIC_NOT_EXIST: RC.TOPIC_NOT_EXIST,
    SendOutcome.TOPIC_NOT_WRITEABLE: RC.NO_PERMISSION,
    SendOutcome.QUEUE_ILLEGAL: RC.SYSTEM_ERROR,
    SendOutcome.GROUP_NOT_EXIST: RC.SUBSCRIPTION_GROUP_NOT_EXIST,
    SendOutcome.DELAY_ILLEGAL: RC.MESSAGE_ILLEGAL,
    SendOutcome.TIMER_ILLEGAL: RC.MESSAGE_ILLEGAL,
    SendOutcome.MESSAGE_ILLEGAL: RC.MESSAGE_ILLEGAL,
    # as the 5.x proxy answers a 4.x client (AbstractRemotingActivity: MESSAGE_PROPERTY_CONFLICT_WITH_TYPE)
    SendOutcome.MESSAGE_TYPE_MISMATCH: RC.MESSAGE_ILLEGAL,
    # lite topics are sent over 5.x only; should the core ever refuse one to a 4.x client:
    # a bad name is the message's fault, a full broker one to try again (elsewhere)
    SendOutcome.LITE_TOPIC_ILLEGAL: RC.MESSAGE_ILLEGAL,
    SendOutcome.LITE_TOPIC_QUOTA_EXCEEDED: RC.SYSTEM_ERROR,
}

PUT_STATUS_TO_CODE = {
    PutStatus.PUT_OK: RC.SUCCESS,
    PutStatus.FLUSH_DISK_TIMEOUT: RC.FLUSH_DISK_TIMEOUT,
    PutStatus.MESSAGE_ILLEGAL: RC.MESSAGE_ILLEGAL,
    PutStatus.PROPERTIES_SIZE_EXCEEDED: RC.MESSAGE_ILLEGAL,
    PutStatus.SERVICE_NOT_AVAILABLE: RC.SERVICE_NOT_AVAILABLE,
}


def send_code(result) -> int:
    """The 4.x response code of a core SendResult: one table for this front and for the
    SDK's in-process transport, which calls the core's send directly."""
    if result.outcome is SendOutcome.STORED:
        return SUCCESS
    if result.outcome is SendOutcome.STORE_REFUSED:
        return PUT_STATUS_TO_CODE.get(result.put_status, RC.SYSTEM_ERROR)
    return SEND_CODES[result.outcome]


SEND_BACK_CODES = {
    SendBackOutcome.GROUP_NOT_EXIST: RC.SUBSCRIPTION_GROUP_NOT_EXIST,
    SendBackOutcome.BROKER_NOT_WRITEABLE: RC.NO_PERMISSION,
    SendBackOutcome.TOPIC_NOT_WRITEABLE: RC.NO_PERMISSION,
    SendBackOutcome.MESSAGE_NOT_FOUND: RC.SYSTEM_ERROR,
    SendBackOutcome.STORE_REFUSED: RC.SYSTEM_ERROR,
}


def send_back_code(result) -> int:
    """The 4.x response code of a core SendBackResult (this front's, and the SDK's
    in-process transport's, which calls the core's send_back directly)."""
    return SEND_BACK_CODES.get(result.outcome, RC.SUCCESS)


def broker_data(broker) -> dict:
    return {"cluster": broker.cluster, "brokerName": broker.broker_name, "brokerAddrs": {"0": broker.address}}


def route_data(route) -> dict:
    """A core TopicRoute as 4.x's TopicRouteData JSON object."""
    return {
        "orderTopicConf": None,
        "queueDatas": [{"brokerName": q.broker_name, "readQueueNums": q.read_queue_nums,
                        "writeQueueNums": q.write_queue_nums, "perm": q.perm, "topicSysFlag": q.sys_flag}
                       for q in route.queues],
        "brokerDatas": [broker_data(b) for b in route.brokers],
        "filterServerTable": {},
    }
