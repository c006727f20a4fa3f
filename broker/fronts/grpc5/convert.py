"""apache.rocketmq.v2 messages ⇄ the core's records and requests (reference
rocketmq-5x-grpc.md §3.5, §3.6, §7). No I/O: protobuf objects in, protobuf objects out.

The stored form is the one a 5.x proxy writes, so 4.x and 5.x clients share topics:
message_id ↔ UNIQ_KEY, tag ↔ TAGS, keys ↔ KEYS (space-joined), message_group ↔
__SHARDINGKEY, delivery_timestamp ↔ TIMER_DELIVER_MS, delivery_attempt = reconsume
times + 1. Stubs: the official generated ones the rocketmq-python-client package ships
(a second generated copy in one process would clash in protobuf's descriptor pool).
"""
from __future__ import annotations

import hashlib
import zlib

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp


from rocketmq_emulator.store.records import MessageRecord, Prop, SysFlag

from ...rocketmq_model.message_types import LITE_TOPIC_PROPERTY, PRIORITY_PROPERTY, SHARDING_KEY
from ...rocketmq_model.priorities import priority_of
from ...user_properties import user_properties

from .stubs import pb

__all__ = ["pb", "SHARDING_KEY", "status", "timestamp_ms", "duration_ms", "duration", "to_proto_message",
           "user_properties", "message_type_of"]

def status(code: int, message: str | None = None) -> pb.Status:
    """A Status with the code's name as message when there is nothing better (as the proxy)."""
    return pb.Status(code=code, message=message or pb.Code.Name(code))


def timestamp_ms(ts: Timestamp) -> int:
    return ts.seconds * 1000 + ts.nanos // 1_000_000


def _timestamp(ms: int) -> Timestamp:
    return Timestamp(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


def duration_ms(d: Duration) -> int:
    return d.seconds * 1000 + d.nanos // 1_000_000


def duration(ms: int) -> Duration:
    return Duration(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


def message_type_of(props: dict, sys_flag: int = 0) -> int:
    """A stored message's type as the proxy tells a 5.x client (GrpcConverter: a half
    message's TRAN_MSG, a delay's DELAY or TIMER_*, a message group; inferred alike for
    4.x messages). A committed transaction no longer has TRAN_MSG: it is told as NORMAL
    (or FIFO), as the proxy tells it."""
    if props.get(Prop.TRAN_MSG) == "true":
        return pb.TRANSACTION
    if Prop.TIMER_DELIVER_MS in props or Prop.DELAY in props or Prop.TIMER_DELAY_SEC in props:
        return pb.DELAY
    if SHARDING_KEY in props:
        return pb.FIFO
    if LITE_TOPIC_PROPERTY in props:
        return pb.LITE
    if PRIORITY_PROPERTY in props:
        return pb.PRIORITY
    return pb.NORMAL


def _host(host) -> str:
    ip, port = host
    return f"{ip}:{port}"


def to_proto_message(rec: MessageRecord, topic: str, receipt_handle: str, delivery_attempt: int,
                     queue_id: int, queue_offset: int, invisible_ms: int | None) -> pb.Message:
    """A delivered message: under the topic the consumer asked for, its body inflated
    if the producer compressed it, an MD5 digest, delivery_attempt >= 1. (A half message
    shown to its producer in a check-back has no receipt handle and no invisible time.)"""
    props = rec.properties
    body = rec.body
    if rec.sys_flag & SysFlag.COMPRESSED:
        body = zlib.decompress(body)
    sp = pb.SystemProperties(
        message_id=props.get(Prop.UNIQ_KEY) or rec.offset_msg_id,
        body_digest=pb.Digest(type=pb.MD5, checksum=hashlib.md5(body).hexdigest().upper()),
        body_encoding=pb.IDENTITY,
        message_type=message_type_of(props, rec.sys_flag),
        born_timestamp=_timestamp(rec.born_timestamp),
        born_host=props.get("__BORNHOST") or _host(rec.born_host),
        store_timestamp=_timestamp(rec.store_timestamp),
        store_host=_host(rec.store_host),
        receipt_handle=receipt_handle,
        queue_id=queue_id,
        queue_offset=queue_offset,
        delivery_attempt=delivery_attempt,
    )
    if invisible_ms is not None:
        sp.invisible_duration.CopyFrom(duration(invisible_ms))
    if props.get(Prop.TAGS):
        sp.tag = props[Prop.TAGS]
    if props.get(Prop.KEYS):
        sp.keys.extend(k for k in props[Prop.KEYS].split(" ") if k)
    if props.get(SHARDING_KEY):
        sp.message_group = props[SHARDING_KEY]
    if LITE_TOPIC_PROPERTY in props:
        sp.lite_topic = props[LITE_TOPIC_PROPERTY]
    priority = priority_of(props)
    if priority is not None:
        sp.priority = priority
    deliver = props.get(Prop.TIMER_DELIVER_MS)
    if deliver and deliver.isdigit():
        sp.delivery_timestamp.CopyFrom(_timestamp(int(deliver)))
    return pb.Message(topic=pb.Resource(name=topic), user_properties=user_properties(props),
                      system_properties=sp, body=body)
