"""Priority messages: a message of a PRIORITY topic carries a priority, 0 (lowest) to 9
(highest); each priority has its own queue of the topic (priority p goes to queue
p * queues // 10, so a topic of 10 queues has exactly one per priority), and a 5.x
receive reads the queues from the highest down (PopService.pop): with a backlog, on one
broker, the highest priority first. Upstream's range is 0..9 by default (a topic's
maximum priority, 9); a priority outside it is refused."""
from __future__ import annotations

from .message_types import PRIORITY_PROPERTY

__all__ = ["MAX_PRIORITY", "priority_of", "priority_problem", "priority_queue"]

MAX_PRIORITY = 9


def priority_problem(priority: int) -> str | None:
    """Why a message's priority is refused, None if it is in range."""
    if not 0 <= priority <= MAX_PRIORITY:
        return f"priority must be 0..{MAX_PRIORITY}, got {priority}"
    return None


def priority_queue(priority: int, queue_nums: int) -> int:
    """The queue of a priority on a topic of ``queue_nums`` queues."""
    return priority * queue_nums // (MAX_PRIORITY + 1)


def priority_of(properties: dict) -> int | None:
    """A stored message's priority (None: not a priority message)."""
    raw = properties.get(PRIORITY_PROPERTY)
    return int(raw) if raw is not None and raw.isdigit() else None
