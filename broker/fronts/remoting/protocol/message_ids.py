"""The two ids of a 4.x message, and finding a message by either, as mqadmin's
queryMsgById does (the CLI's `message show` and the SDK's ``view_message`` share this).

  message id (UNIQ_KEY)  the client's id: what SendResult.msg_id, consumers, `message
                         send`, `message find` and the dashboard show; kept by every
                         retry copy, dead letter and re-drive of the message
  offsetMsgId            the broker's id of one stored record: its store address and
                         commit-log offset (32 hex digits), read with VIEW_MESSAGE_BY_ID

An id that is the offsetMsgId of a broker of the cluster is read at its offset; any other
id (or an offset where nothing is stored) is looked up as a message id: QUERY_MESSAGE with
the unique-key flag, for each topic, on every broker. Of the records found, the original
(the first stored outside %RETRY%, %DLQ% and the delay topic) is the message; the others
are its copies.
"""
from __future__ import annotations

from rocketmq_emulator.store.records import DLQ_PREFIX, RETRY_PREFIX, SCHEDULE_TOPIC, Prop, decode_offset_msg_id

from .codes import RequestCode
from .command import RemotingCommand

__all__ = ["offset_id_target", "unique_key_query", "original_and_copies", "not_found_text"]


def offset_id_target(msg_id: str, addresses: dict[str, str]) -> tuple[str, int] | None:
    """(broker name, commit-log offset) when ``msg_id`` is an offsetMsgId naming one of
    ``addresses`` ({broker name: "ip:port"}); None otherwise (then it is a message id)."""
    try:
        (ip, port), offset = decode_offset_msg_id(msg_id.upper())
    except ValueError:
        return None
    address = f"{ip}:{port}"
    owner = next((name for name, a in addresses.items() if a == address), None)
    return None if owner is None or offset < 0 else (owner, offset)


def unique_key_query(topic: str, msg_id: str) -> RemotingCommand:
    """QUERY_MESSAGE for the records of ``topic`` whose UNIQ_KEY is ``msg_id`` (the
    broker answers QUERY_NOT_FOUND when there is none)."""
    return RemotingCommand.request(RequestCode.QUERY_MESSAGE, {
        "topic": topic, "key": msg_id, "maxNum": 32, "beginTimestamp": 0, "endTimestamp": 2 ** 62,
        "_UNIQUE_KEY_QUERY": "true"})


def _is_copy(topic: str) -> bool:
    return topic.startswith((RETRY_PREFIX, DLQ_PREFIX)) or topic == SCHEDULE_TOPIC


def original_and_copies(records, msg_id: str):
    """(the original, [its copies in store order]) of the decoded records carrying
    UNIQ_KEY ``msg_id`` (records matching only by KEYS are left out); (None, []) when
    there is none."""
    mine = sorted((r for r in records if r.properties.get(Prop.UNIQ_KEY) == msg_id),
                  key=lambda r: (_is_copy(r.topic), r.store_timestamp, r.offset_msg_id))
    seen, unique = set(), []
    for r in mine:
        if r.offset_msg_id not in seen:
            seen.add(r.offset_msg_id)
            unique.append(r)
    if not unique:
        return None, []
    original, copies = unique[0], unique[1:]
    return original, sorted(copies, key=lambda r: (r.store_timestamp, r.offset_msg_id))


def not_found_text(msg_id: str) -> str:
    return (f"no message has id {msg_id}: it is no offsetMsgId of a broker here, and no topic holds a message "
            f"with this message id (UNIQ_KEY)")
