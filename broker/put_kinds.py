"""What kind of put a caller of ``BrokerCore.put_message`` makes, said once per call site
(a module constant here) instead of a handful of keyword flags on every put.

A kind fixes what does not change from one put of a call site to the next: the event
the put records, whether the message is stored as it is (never diverted to a delay
queue), and whether the caller vouches that the record's map is what its stored string
parses to (a copy made from a kept record's map, so the store's CRC property is the only
thing to add: ``MessageRecord.complete_stored_map``). What changes per put (the group,
a delay level or time, the body's CRC, the clock's time) stays an argument. The core reads
a kind's fields as attributes: no call per put."""
from __future__ import annotations

from dataclasses import dataclass

from .events import EventKind

__all__ = ["PutKind", "SENT", "DEAD_LETTERED", "SENT_BACK", "SENT_BACK_DEAD", "AS_IS", "DUE", "DUE_KEPT"]


@dataclass(frozen=True, slots=True)
class PutKind:
    event: str                  # the EventKind the put records (and counts in the rates)
    as_is: bool = False         # never diverted: stored where it is addressed
    vouched_map: bool = False   # rec.properties is its stored string's map, but for the CRC


SENT = PutKind(EventKind.STORED)                    # a producer's message (delayed by its properties)
DEAD_LETTERED = PutKind(EventKind.DEAD_LETTERED)    # a message given up on, to %DLQ%<group>
SENT_BACK = PutKind(EventKind.SENT_BACK, vouched_map=True)           # a 4.x send-back's retry copy
SENT_BACK_DEAD = PutKind(EventKind.DEAD_LETTERED, vouched_map=True)  # a 4.x send-back past its maximum
AS_IS = PutKind(EventKind.STORED, as_is=True)       # a transaction's half, op record or copy
DUE = PutKind(EventKind.REDELIVERED)                # a delayed message come due, read back from the store
DUE_KEPT = PutKind(EventKind.REDELIVERED, as_is=True, vouched_map=True)  # ... carried by the schedule
