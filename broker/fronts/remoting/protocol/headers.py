"""Custom-header helpers: SEND_MESSAGE_V2's short field names, plus re-exports of the
batch-body codec (``batch``) and the fastjson body reader (``fastjson``).

Producers send single messages as SEND_MESSAGE_V2 (310) and batches as
SEND_BATCH_MESSAGE (320) with one-letter extFields keys (``SendMessageRequestHeaderV2``);
the broker works with the long names of ``SendMessageRequestHeader`` (V1). Both
directions copy the dict once, O(fields); keys outside the table (``bname``, ACL
signature fields, vendor extras) pass through untouched.
"""
from __future__ import annotations

from .batch import decode_batch_body, encode_batch_body
from .fastjson import dumps_json, loads_fastjson

__all__ = ["SEND_V2_TO_V1", "SEND_V1_TO_V2", "send_header_v2_to_v1", "send_header_v1_to_v2",
           "encode_batch_body", "decode_batch_body", "loads_fastjson", "dumps_json"]

# SendMessageRequestHeaderV2.createSendMessageRequestHeaderV1: a..n
SEND_V2_TO_V1: dict[str, str] = {
    "a": "producerGroup",
    "b": "topic",
    "c": "defaultTopic",
    "d": "defaultTopicQueueNums",
    "e": "queueId",
    "f": "sysFlag",
    "g": "bornTimestamp",
    "h": "flag",
    "i": "properties",
    "j": "reconsumeTimes",
    "k": "unitMode",
    "l": "maxReconsumeTimes",
    "m": "batch",
    "n": "bname",   # the brokerName, inherited from RpcRequestHeader under this name
}
SEND_V1_TO_V2: dict[str, str] = {v: k for k, v in SEND_V2_TO_V1.items()}


def _rename(ext: dict | None, table: dict[str, str]) -> dict:
    if not ext:
        return {}
    out = {}
    mapped = {}
    for k, v in ext.items():
        name = table.get(k)
        if name is None:
            out[k] = v
        else:
            mapped[name] = v
    out.update(mapped)  # a mapped field wins over a same-named pass-through
    return out


def send_header_v2_to_v1(ext: dict | None) -> dict:
    """Short names (a..n) to SendMessageRequestHeader's long names. O(fields)."""
    return _rename(ext, SEND_V2_TO_V1)


def send_header_v1_to_v2(ext: dict | None) -> dict:
    """Long names to SEND_MESSAGE_V2's short names (a..n). O(fields)."""
    return _rename(ext, SEND_V1_TO_V2)
