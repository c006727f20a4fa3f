"""Whole-store accounting keeps per message a few values, not the records: the
simulator accounts a 10,000-message retry ladder (340,000 records) at the end of every
run, and holding each copy's head until the end made that run's peak 529 MB."""
from __future__ import annotations

import tracemalloc

from rocketmq_emulator.store.accounting import account
from rocketmq_emulator.store.record_view import RecordHead

S1, S2 = "\x01", "\x02"


def ladder(messages: int, retries: int = 16):
    """RecordHeads of a retry ladder in log order: each message's original, then per
    attempt its schedule copy and its %RETRY% delivery (as the broker stores them), then
    its dead letter. Made one at a time, as store.heads() yields them."""
    phys = 0
    for m in range(messages):
        key = f"ORIGIN{m:010d}"
        yield RecordHead(300, "Orders", m % 4, m // 4, phys, 0, 0, key, f"UNIQ_KEY{S1}U{m}{S2}TAGS{S1}a")
        phys += 300
        for attempt in range(1, retries + 1):
            props = (f"ORIGIN_MESSAGE_ID{S1}{key}{S2}RETRY_TOPIC{S1}Orders{S2}UNIQ_KEY{S1}U{m}{S2}"
                     f"DELAY{S1}{attempt + 2}{S2}REAL_TOPIC{S1}%RETRY%g{S2}REAL_QID{S1}0")
            yield RecordHead(400, "SCHEDULE_TOPIC_XXXX", attempt + 1, m, phys, 0, attempt, f"S{phys:012d}", props)
            phys += 400
            yield RecordHead(400, "%RETRY%g", 0, m * retries + attempt - 1, phys, 0, attempt, f"R{phys:012d}",
                             props.replace("REAL_TOPIC\x01%RETRY%g", "REAL_TOPIC\x01%RETRY%g"))
            phys += 400
        yield RecordHead(400, "%DLQ%g", 0, m, phys, 0, retries + 1, f"D{phys:012d}",
                         f"ORIGIN_MESSAGE_ID{S1}{key}{S2}UNIQ_KEY{S1}U{m}")
        phys += 400


def _peak(messages: int) -> int:
    offsets = {"Orders@g": {q: 10**9 for q in range(4)}, "%RETRY%g@g": {0: 10**9}}
    tracemalloc.start()
    try:
        result = account(ladder(messages), offsets)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.produced == messages and result.dead_lettered == messages
    assert result.send_backs == messages * 17          # 16 schedule copies + the dead letter each
    return peak


def test_accounting_memory_grows_with_messages_not_with_records():
    """2,000 messages of 34 records each: the peak is a few hundred bytes per message
    (the old pass kept every copy's head and properties: over 30 KB per message)."""
    peak = _peak(2_000)
    assert peak < 2_000 * 4_000, f"accounting peaked at {peak} bytes for 2,000 messages (68,000 records)"
