"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320).

Follows 4.9.8's SendMessageProcessor: msgCheck (permission, topic name, auto-create from
TBW102, %RETRY% auto-create, queue id), handleRetryAndDLQ for sends to %RETRY%<group>
(reconsumeTimes >= max → %DLQ%<group>), then the one put path of the core.
"""
from __future__ import annotations

from rocketmq_emulator.store import PutStatus
from rocketmq_emulator.store.records import MessageRecord, Prop, properties_to_string, string_to_properties

from ..config import PERM_READ, PERM_WRITE
from ..events import EventKind
from ..protocol import RemotingCommand, RequestCode, ResponseCode as RC
from ..protocol.command import RPC_TYPE_RESPONSE
from ..protocol.headers import decode_batch_body
from ..retry_lifecycle import rocketmq4_retry_send
from ..topics import (DLQ_PREFIX, NOT_ALLOWED_SEND, RETRY_PREFIX, TopicNameError, dlq_topic,
                      validate_topic_name)

__all__ = ["send_message", "send_batch_message", "PUT_STATUS_TO_CODE"]

PUT_STATUS_TO_CODE = {
    PutStatus.PUT_OK: RC.SUCCESS,
    PutStatus.FLUSH_DISK_TIMEOUT: RC.FLUSH_DISK_TIMEOUT,
    PutStatus.MESSAGE_ILLEGAL: RC.MESSAGE_ILLEGAL,
    PutStatus.PROPERTIES_SIZE_EXCEEDED: RC.MESSAGE_ILLEGAL,
    PutStatus.SERVICE_NOT_AVAILABLE: RC.SERVICE_NOT_AVAILABLE,
}


_SUCCESS = int(RC.SUCCESS)   # a plain int: the header encoder's fast path takes exact ints


class _Header:
    """SendMessageRequestHeader (V1 names), typed. SEND_MESSAGE_V2 and
    SEND_BATCH_MESSAGE carry the short names a..m (a long name is taken when its short
    one is absent); read straight, field by field: this runs once per message."""

    __slots__ = ("producer_group", "topic", "default_topic", "default_topic_queue_nums", "queue_id",
                 "sys_flag", "born_timestamp", "flag", "properties", "reconsume_times",
                 "max_reconsume_times", "batch")

    def __init__(self, request) -> None:
        ext = request.ext_fields or {}
        if request.code != RequestCode.SEND_MESSAGE and _SHORT_ONLY.issuperset(ext) and self._read_v2(ext):
            return
        self._read(request, ext)

    def _read_v2(self, ext: dict) -> bool:
        """The usual header — V2 short names, every value a string — read without the
        per-field checks; False (nothing kept) for anything else, which ``_read`` then
        reads, or refuses with the right message. Same values as ``_read``."""
        get = ext.get
        group = get("a")
        topic = get("b")
        default_topic = get("c")
        props = get("i")
        batch = get("m")
        if not (group.__class__ is str and group and topic.__class__ is str
                and (default_topic is None or default_topic.__class__ is str)
                and (props is None or props.__class__ is str) and (batch is None or batch.__class__ is str)):
            return False
        try:
            queue_id = int(get("e"))                     # None: TypeError, to _read for its message
            # each "x if x else" is _int's "absent or empty is None"; "or n" the default
            dtqn = get("d")
            sys_flag = get("f")
            born = get("g")
            flag = get("h")
            recon = get("j")
            max_recon = get("l")
            dtqn = (int(dtqn) if dtqn else 0) or 4
            sys_flag = int(sys_flag) if sys_flag else 0
            born = int(born) if born else 0
            flag = int(flag) if flag else 0
            recon = int(recon) if recon else 0
            max_recon = int(max_recon) if max_recon else None
        except (TypeError, ValueError):
            return False
        self.producer_group = group
        self.topic = topic
        self.default_topic = default_topic or "TBW102"
        self.default_topic_queue_nums = dtqn
        self.queue_id = queue_id
        self.sys_flag = sys_flag
        self.born_timestamp = born
        self.flag = flag
        self.properties = props or ""
        self.reconsume_times = recon
        self.max_reconsume_times = max_recon
        self.batch = batch is not None and batch.lower() == "true"
        return True

    def _read(self, request, ext: dict) -> None:
        if request.code == RequestCode.SEND_MESSAGE:
            names = _LONG
        else:
            names = _SHORT
            if not _SHORT_ONLY.issuperset(ext):
                # Some long names present: each short one wins, a long one fills a gap.
                ext = {**{long: ext[long] for long in _LONG if long in ext},
                       **{long: ext[short] for short, long in zip(_SHORT, _LONG) if short in ext}}
                names = _LONG
        group, topic, default_topic, dtqn, qid, sys_flag, born, flag, props, recon, max_recon, batch = (
            map(ext.get, names))
        if group is None or group == "":
            raise _missing("producerGroup")
        if topic is None:
            raise _missing("topic")
        self.producer_group = group if group.__class__ is str else str(group)
        self.topic = topic if topic.__class__ is str else str(topic)  # "" is validated later
        self.default_topic = _text(default_topic) or "TBW102"
        self.default_topic_queue_nums = _int(dtqn, "defaultTopicQueueNums") or 4
        qid = _int(qid, "queueId")
        if qid is None:
            raise _missing("queueId")
        self.queue_id = qid
        self.sys_flag = _int(sys_flag, "sysFlag") or 0
        self.born_timestamp = _int(born, "bornTimestamp") or 0
        self.flag = _int(flag, "flag") or 0
        self.properties = _text(props) or ""
        self.reconsume_times = _int(recon, "reconsumeTimes") or 0
        self.max_reconsume_times = _int(max_recon, "maxReconsumeTimes")
        self.batch = batch is not None and str(batch).lower() == "true"


# SendMessageRequestHeader's fields in the order _Header reads them, and the short
# names SendMessageRequestHeaderV2 gives them on the wire.
_LONG = ("producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
         "bornTimestamp", "flag", "properties", "reconsumeTimes", "maxReconsumeTimes", "batch")
_SHORT = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "l", "m")
# Every key a V2 header may carry without a long name ("k" unitMode, "n" brokerName).
_SHORT_ONLY = frozenset(_SHORT) | {"k", "n"}


def _missing(name: str):
    from ..protocol import HeaderError
    return HeaderError(f"the custom field <{name}> is null")


def _text(v) -> str | None:
    return None if v is None or v == "" else str(v)


def _int(v, name: str) -> int | None:
    if v is None or v == "":
        return None
    if v.__class__ is int:
        return v
    try:
        return int(v)
    except (TypeError, ValueError):
        from ..protocol import HeaderError
        raise HeaderError(f"the custom field <{name}> is not an integer: {v!r}") from None


def _check(core, request, h: _Header):
    """msgCheck. Returns (topic config, queue id) or an error response."""
    if not core.writeable:
        # 4.9.8 refuses only order topics here and relies on routes (perm without
        # write) to steer producers away; a direct send is refused outright so a
        # read-only broker behaves read-only for every client.
        return request.response(RC.NO_PERMISSION, f"the broker[{core.config.broker_ip}] sending message is forbidden")
    try:
        validate_topic_name(h.topic)
    except TopicNameError as exc:
        return request.response(RC.SYSTEM_ERROR, str(exc))
    if h.topic in NOT_ALLOWED_SEND:
        return request.response(RC.NO_PERMISSION, f"Sending message to topic[{h.topic}] is forbidden.")
    tc = core.topics.get(h.topic)
    if tc is None:
        tc = core.topics.create_in_send(h.topic, h.default_topic, h.default_topic_queue_nums)
        if tc is None and h.topic.startswith(RETRY_PREFIX):
            tc = core.topics.create_system(h.topic, 1, PERM_READ | PERM_WRITE)
        if tc is None:
            return request.response(RC.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, apply first please!")
    if not tc.writeable:
        return request.response(RC.NO_PERMISSION, f"the topic[{h.topic}] sending message is forbidden")
    qid = h.queue_id
    if qid >= tc.queue_nums:
        return request.response(RC.SYSTEM_ERROR, f"request queueId[{qid}] is illegal, topic {h.topic} has "
                                f"{tc.queue_nums} queues, producer: {h.producer_group}")
    if qid < 0:
        qid = core.rng.randrange(99999999) % tc.write_queue_nums
    return tc, qid


def _retry_or_dlq(core, request, h: _Header, topic: str, qid: int, props: dict):
    """handleRetryAndDLQ: a send to %RETRY%<group> past max reconsume goes to the DLQ."""
    group = topic[len(RETRY_PREFIX):]
    gc = core.groups.find(group)
    if gc is None:
        return request.response(RC.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}")
    max_times = gc.retry_max_times
    if request.version >= 121 and h.max_reconsume_times is not None:
        max_times = h.max_reconsume_times
    if rocketmq4_retry_send(group, h.reconsume_times, max_times):
        dlq = dlq_topic(group)
        tc = core.topics.create_system(dlq, 1, PERM_READ | PERM_WRITE)
        if not tc.writeable:
            return request.response(RC.NO_PERMISSION, f"the topic[{dlq}] sending message is forbidden")
        props[Prop.DELAY] = "0"
        return dlq, 0, group
    return topic, qid, None


def send_message(core, request, channel):
    h = _Header(request)
    if h.batch:
        return send_batch_message(core, request, channel)
    checked = _check(core, request, h)
    if not isinstance(checked, tuple):
        return checked
    tc, qid = checked
    topic = h.topic
    props = string_to_properties(h.properties)
    delay = props.get(Prop.DELAY)
    if delay is not None and not delay.lstrip("-").isdigit():
        return request.response(RC.MESSAGE_ILLEGAL, f"DELAY property {delay!r} is not an integer delay level")
    dlq_group = None
    if topic.startswith(RETRY_PREFIX):
        routed = _retry_or_dlq(core, request, h, topic, qid, props)
        if not isinstance(routed, tuple):
            return routed
        topic, qid, dlq_group = routed
    props[Prop.CLUSTER] = core.config.broker_cluster_name
    # positional, in MessageRecord's field order (topic, body, queue_id, flag, properties,
    # sys_flag, born_timestamp, born_host, store_timestamp, store_host, reconsume_times):
    # keywords cost about 0.5 µs more, on every send
    rec = MessageRecord(topic, request.body, qid, h.flag, props, h.sys_flag, h.born_timestamp,
                        core.born_host_of(channel), 0, core.store_host, h.reconsume_times)
    # WAIT stays in the map but not in the stored string (the broker strips it).
    rec.properties_text = properties_to_string(props, skip=Prop.WAIT)
    kind = EventKind.DEAD_LETTERED if dlq_group else EventKind.STORED
    res = core.put_message(rec, kind=kind, group=dlq_group)
    return _put_response(core, request, res, h.queue_id if h.queue_id >= 0 else qid)


def _put_response(core, request, res, qid, msg_id=None):
    code = PUT_STATUS_TO_CODE.get(res.status, RC.SYSTEM_ERROR)
    if code != RC.SUCCESS:
        return request.response(code, res.remark or res.status.name)
    # Built with string values already, positionally (as RemotingCommand.response does):
    # the reply of every send.
    return RemotingCommand(_SUCCESS, {
        "msgId": msg_id or res.msg_id, "queueId": str(qid), "queueOffset": str(res.queue_offset),
        "MSG_REGION": core.config.region_id, "TRACE_ON": "true" if core.config.trace_topic_enable else "false",
    }, b"", request.opaque, RPC_TYPE_RESPONSE, None, "JAVA", request.version, request.serialize_type)


def send_batch_message(core, request, channel):
    """A batch: one topic, no delay, not a %RETRY% topic; every inner message stored
    with the batch-level properties appended; msgId is the comma-joined offsetMsgIds."""
    h = _Header(request)
    checked = _check(core, request, h)
    if not isinstance(checked, tuple):
        return checked
    tc, qid = checked
    if h.topic.startswith(RETRY_PREFIX) or h.topic.startswith(DLQ_PREFIX):
        return request.response(RC.MESSAGE_ILLEGAL, "batch request does not support retry group " + h.topic)
    from ..protocol import ProtocolError

    try:
        inner = decode_batch_body(request.body)
    except ProtocolError as exc:
        return request.response(RC.MESSAGE_ILLEGAL, f"bad batch body: {exc}")
    if not inner:
        return request.response(RC.MESSAGE_ILLEGAL, "empty batch")
    batch_props = string_to_properties(h.properties)
    batch_props[Prop.CLUSTER] = core.config.broker_cluster_name
    records = []
    for flag, body, props_text in inner:
        props = string_to_properties(props_text)
        if props.get(Prop.DELAY, "0") not in ("0", ""):
            return request.response(RC.MESSAGE_ILLEGAL, "a batch message cannot have a delay level")
        props.update({k: v for k, v in batch_props.items() if k != Prop.WAIT})
        if len(body) > core.config.max_message_size:
            return request.response(RC.MESSAGE_ILLEGAL, f"the message body size over max value, MAX: "
                                    f"{core.config.max_message_size}")
        records.append(MessageRecord(topic=h.topic, body=body, queue_id=qid, flag=flag, properties=props,
                                     sys_flag=h.sys_flag, born_timestamp=h.born_timestamp,
                                     born_host=core.born_host_of(channel), store_host=core.store_host))
    ids, first = [], None
    for rec in records:
        res = core.put_message(rec)
        if res.status is not PutStatus.PUT_OK:
            return _put_response(core, request, res, qid)
        ids.append(res.msg_id)
        first = first or res
    return _put_response(core, request, first, qid, msg_id=",".join(ids))
