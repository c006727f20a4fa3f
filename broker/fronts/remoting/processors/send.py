"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320): the 4.x front of
the core's send operations (broker/rocketmq_model/sending.py: 4.9.8's msgCheck, handleRetryAndDLQ, the
one put path). Here: the header (V1 long names or V2 short ones) and the batch body
read into requests, outcomes mapped to 4.x codes.
"""
from __future__ import annotations

from rocketmq_emulator.store.records import Prop, string_to_properties

from ....operations import BatchSendRequest, SendOutcome as O, SendRequest
from ..protocol import RemotingCommand, RequestCode, ResponseCode as RC
from ..protocol.command import RPC_TYPE_RESPONSE
from ..protocol.headers import decode_batch_body
from ..protocol.typed import SUCCESS, send_code

__all__ = ["send_message", "send_batch_message"]

UNIQ_KEY = Prop.UNIQ_KEY





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




def send_message(front, request, channel):
    """SEND_MESSAGE / SEND_MESSAGE_V2: the header as the core's SendRequest."""
    core = front.core
    h = _Header(request)
    if h.batch:
        return send_batch_message(front, request, channel)
    props = string_to_properties(h.properties)
    req = SendRequest(h.producer_group, h.topic, request.body, h.queue_id, props,
                      h.flag, h.sys_flag, h.born_timestamp, h.reconsume_times,
                      # a client's maxReconsumeTimes counts from 4.x V3_4_9 (version 121) on
                      h.max_reconsume_times if request.version >= 121 else None,
                      h.default_topic, h.default_topic_queue_nums)
    return _response(core, request, core.send(req, channel), props[UNIQ_KEY] if UNIQ_KEY in props else None)


def _response(core, request, result, transaction_id: str | None = None):
    if result.outcome is not O.STORED:
        return request.response(send_code(result), result.remark)
    # Built with string values already, positionally (as RemotingCommand.response does):
    # the reply of every send. transactionId: the message's UNIQ_KEY, as upstream's
    # SendMessageProcessor answers every single send (a transaction's producer ends it by it).
    ext = {"msgId": result.msg_id, "queueId": str(result.queue_id), "queueOffset": str(result.queue_offset),
           "MSG_REGION": core.config.region_id, "TRACE_ON": "true" if core.config.trace_topic_enable else "false"}
    if transaction_id is not None:
        ext["transactionId"] = transaction_id
    return RemotingCommand(SUCCESS, ext, b"", request.opaque, RPC_TYPE_RESPONSE, None, "JAVA", request.version,
                           request.serialize_type)


def send_batch_message(front, request, channel):
    """SEND_BATCH_MESSAGE: the batch body decoded into the core's BatchSendRequest."""
    core = front.core
    h = _Header(request)
    from ..protocol import ProtocolError

    try:
        inner = decode_batch_body(request.body)
    except ProtocolError as exc:
        # 4.9.8 checks the destination before it reads the body: the core answers for
        # the destination (nothing stored), and only a good one hears about the body
        checked = core.send_batch(BatchSendRequest(h.producer_group, h.topic, (), h.queue_id,
                                                   default_topic=h.default_topic,
                                                   default_topic_queue_nums=h.default_topic_queue_nums), channel)
        if checked.outcome is O.MESSAGE_ILLEGAL and checked.remark == "empty batch":
            return request.response(RC.MESSAGE_ILLEGAL, f"bad batch body: {exc}")
        return _response(core, request, checked)
    req = BatchSendRequest(h.producer_group, h.topic,
                           tuple((flag, body, string_to_properties(text)) for flag, body, text in inner),
                           h.queue_id, string_to_properties(h.properties), h.sys_flag, h.born_timestamp,
                           h.default_topic, h.default_topic_queue_nums)
    return _response(core, request, core.send_batch(req, channel))
