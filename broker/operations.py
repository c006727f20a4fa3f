"""The broker core's typed operations: requests and results with no wire format in them.

A front (the 4.x remoting processors today; 5.x gRPC and Pulsar next) turns what its
clients send into these, calls the core, and turns the result into its own reply; the
core's outcomes name what happened, the front decides which code its protocol uses for
it. Requests are frozen values; results carry what every front needs to answer.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = ["PullOutcome", "PullRequest", "PullResult", "OffsetCommit", "CommitOutcome", "ConsumerRegistration",
           "Registration", "QueueRoute", "BrokerRoute", "TopicRoute"]


class PullOutcome(enum.Enum):
    """What a pull found, or why it was refused (checked in 4.9.8's order)."""

    FOUND = "found"
    NO_NEW_MESSAGE = "no new message"               # nothing at or after the offset yet (may be held)
    RETRY_IMMEDIATELY = "retry immediately"         # nothing matched in the scanned range
    OFFSET_MOVED = "offset moved"                   # the offset is outside the queue
    BROKER_NOT_READABLE = "broker not readable"
    GROUP_NOT_EXIST = "group does not exist"
    GROUP_NOT_CONSUMABLE = "group may not consume"
    TOPIC_NOT_EXIST = "topic does not exist"
    TOPIC_NOT_READABLE = "topic not readable"
    QUEUE_ILLEGAL = "queue id out of range"
    SUBSCRIPTION_PARSE_FAILED = "subscription does not parse"
    SUBSCRIPTION_NOT_EXIST = "no subscription"
    BROADCAST_FORBIDDEN = "broadcast consumption not allowed"
    SUBSCRIPTION_NOT_LATEST = "subscription not latest"
    FILTER_UNSUPPORTED = "filter type not supported"

    @property
    def refused(self) -> bool:
        return self not in _ANSWERS


_ANSWERS = frozenset({PullOutcome.FOUND, PullOutcome.NO_NEW_MESSAGE, PullOutcome.RETRY_IMMEDIATELY,
                      PullOutcome.OFFSET_MOVED})


@dataclass(frozen=True, slots=True)
class PullRequest:
    """Read up to ``max_msgs`` records of one queue for ``group`` from ``offset``.

    ``subscription``: a tag expression sent with the pull (None: the group's registered
    subscription of the topic, at least ``sub_version``). ``commit_offset``: the group's
    consumed offset of this queue, committed with the pull (None: nothing to commit)."""

    group: str
    topic: str
    queue_id: int
    offset: int
    max_msgs: int
    subscription: str | None = None
    expression_type: str = "TAG"
    sub_version: int = 0
    commit_offset: int | None = None


@dataclass(frozen=True, slots=True)
class PullResult:
    """The records found (whole stored records, in queue order) and where the next pull
    starts; ``min_offset``/``max_offset`` are the queue's bounds at the time.
    ``tag_codes``: the filter the pull used (None: every tag) — what a held pull waits
    for. ``store_status``: the store's own word for an empty result (4.x puts it in the
    remark)."""

    outcome: PullOutcome
    records: list[bytes] | tuple[bytes, ...] = ()
    next_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    remark: str | None = None
    tag_codes: frozenset[int] | None = None
    store_status: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """A group's consumed offset of one queue (the next offset it will read)."""

    group: str
    topic: str
    queue_id: int
    offset: int


class CommitOutcome(enum.Enum):
    COMMITTED = "committed"
    TOPIC_NOT_EXIST = "topic does not exist"
    GROUP_NOT_EXIST = "group does not exist"


@dataclass(frozen=True, slots=True)
class ConsumerRegistration:
    """One consumer group a client runs: how it consumes and what it subscribes to
    (``subscriptions``: broker.groups.SubscriptionData, one per topic)."""

    group: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscriptions: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class Registration:
    """What a client says it is (a 4.x heartbeat): its id, its consumer groups and its
    producer groups. Registering again with the same content changes nothing."""

    client_id: str
    consumers: tuple[ConsumerRegistration, ...] = ()
    producers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QueueRoute:
    """A topic's queues on one broker, and what may be done with them there (perm is
    the topic's, masked by the broker's own permission)."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    sys_flag: int = 0


@dataclass(frozen=True, slots=True)
class BrokerRoute:
    cluster: str
    broker_name: str
    address: str


@dataclass(frozen=True, slots=True)
class TopicRoute:
    """Where a topic's queues are: what a client needs to send to and pull from it."""

    queues: tuple[QueueRoute, ...]
    brokers: tuple[BrokerRoute, ...]
