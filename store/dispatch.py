"""The one dispatch rule: which consume-queue entry a stored record gets. The live put
(MessageStore.put), recovery (opening.dispatch_from) and the invariant check
(invariants.check_store) all ask it, so a queue rebuilt from the log is the queue the
puts built, byte for byte."""
from __future__ import annotations

from .record_view import prop_value
from .records import SCHEDULE_TOPIC, TIMER_TOPIC, SysFlag, tags_code

__all__ = ["dispatch", "dispatched", "LISTED", "entry_tags_code"]


def dispatched(sys_flag: int) -> bool:
    """Whether a record with this sysFlag gets a consume-queue entry: every record but
    prepared and rollback transaction halves (upstream's DispatchRequest rule)."""
    return sys_flag & 0xC not in (SysFlag.TRANSACTION_PREPARED, SysFlag.TRANSACTION_ROLLBACK)


# The rule as a table, by a sysFlag's transaction bits (``LISTED[sys_flag & 0xC]``): what
# the put reads before it appends (it needs the answer for the queue offset it writes),
# made from ``dispatched`` itself, so the rule is written once.
LISTED = {bits: dispatched(bits) for bits in (0x0, 0x4, 0x8, 0xC)}


def entry_tags_code(topic: str, properties_text: str, store_timestamp: int, delays_ms: tuple[int, ...]) -> int:
    """The tagsCode of a record's entry, from its *stored* properties string (so a queue
    rebuilt from the log is byte-identical to the one written at put time): the one
    place it is computed, for puts, recovery and the invariant check.

    SCHEDULE_TOPIC_XXXX: the delivery time, store time + delay(DELAY) with DELAY clamped
    to the table; a missing, unparsable or non-positive level counts as +1000 ms.
    The timer topic: the delivery time TIMER_DELIVER_MS (store time if unreadable).
    Any other topic: the Java hash of TAGS (0 without tags).
    """
    if topic == TIMER_TOPIC:
        raw = prop_value(properties_text, "TIMER_DELIVER_MS")
        return int(raw) if raw and raw.isascii() and raw.isdigit() else store_timestamp
    if topic == SCHEDULE_TOPIC:
        # prop_value(text, "DELAY"), quicker for the usual string (as TAGS below)
        _, sep, raw = properties_text.rpartition("\x02DELAY\x01")
        if not sep:
            raw = properties_text[6:] if properties_text[:6] == "DELAY\x01" else ""
        raw = raw.partition("\x02")[0]
        if not raw:                             # none, or an empty last one: an earlier one counts
            raw = prop_value(properties_text, "DELAY")
        try:
            level = int(raw) if raw and raw.isascii() else 0
        except ValueError:
            level = 0
        if level > len(delays_ms):
            level = len(delays_ms)
        return store_timestamp + (delays_ms[level - 1] if level > 0 else 1000)
    # tags_code(prop_value(text, "TAGS")), quicker for the usual string: the last segment
    # that starts "TAGS\x01" has a value. A TAGS segment is either the first one (the
    # client's usual place for it) or follows a "\x02". (partition, not find: str.find
    # parses its arguments the slow way)
    _, sep, value = properties_text.rpartition("\x02TAGS\x01")
    if not sep:
        if not properties_text.startswith("TAGS\x01"):
            return 0
        value = properties_text[5:]             # the first segment, and the only TAGS one
    value = value.partition("\x02")[0]
    if not value:                               # an empty last TAGS: an earlier one counts
        return tags_code(prop_value(properties_text, "TAGS"))
    try:
        return _tag_codes[value]
    except KeyError:
        if len(_tag_codes) >= 4096:
            _tag_codes.clear()
        code = _tag_codes[value] = tags_code(value)
        return code


_tag_codes: dict[str, int] = {}         # TAGS value -> tagsCode (bounded)


def dispatch(topic: str, queue_id: int, sys_flag: int, properties_text: str, store_timestamp: int, phys: int,
             size: int, delays_ms: tuple[int, ...]) -> tuple[tuple[str, int], tuple[int, int, int]] | None:
    """``((topic, queue_id), (commit-log offset, size, tagsCode))`` for the record stored
    at ``phys`` with these fields (``properties_text`` as stored), or None for a record
    no queue lists (a prepared or rolled-back transaction half). O(properties) for the
    tagsCode."""
    if not LISTED[sys_flag & 0xC]:
        return None
    return (topic, queue_id), (phys, size, entry_tags_code(topic, properties_text, store_timestamp, delays_ms))
