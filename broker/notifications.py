"""What the core tells its fronts later, unasked: typed notifications, one per event a
front turns into its own wire message. A front subscribes to the kinds it serves
(``Notifier.subscribe``); the core never builds a wire message itself.

Cost: one call per subscriber of the notification's kind (a kind nobody subscribed to
costs a dict look-up)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .core_types import Channel
from .operations import PullRequest, PullResult

__all__ = ["PullReady", "ConsumerIdsChanged", "DispatchReady", "PulsarTopicsChanged", "PulsarConsumersDetached",
           "TransactionCheck", "LiteUnsubscribed", "VisibleAgain", "Notification", "Notifier"]


@dataclass(slots=True)
class PullReady:
    """A held pull is answered (a message arrived for it, or its suspend time ended):
    ``result`` for the pull ``request`` the front held with ``context`` (its own record
    of the request: the 4.x front keeps the command, to reply with its opaque). A value
    nobody changes (not frozen only because a frozen one costs a call per field, and
    one is made per long poll answered)."""

    channel: Channel
    context: Any
    request: PullRequest
    result: PullResult


@dataclass(frozen=True, slots=True)
class ConsumerIdsChanged:
    """The members or subscriptions of ``group`` changed: the consumer on ``channel``
    should rebalance (4.x: NOTIFY_CONSUMER_IDS_CHANGED)."""

    channel: Channel
    group: str


@dataclass(frozen=True, slots=True)
class DispatchReady:
    """Something new to dispatch to the Pulsar-style subscriptions of ``topic``: a
    message stored into it, or delayed deliveries come due (the Pulsar front pumps)."""

    topic: str


@dataclass(frozen=True, slots=True)
class PulsarTopicsChanged:
    """Pulsar topics (their store names) were made or, ``deleted``, deleted: the Pulsar
    front tells its topic-list watchers, and closes a deleted topic's producers and
    consumers (they reconnect, as to a topic Pulsar deleted)."""

    topics: tuple[str, ...]
    deleted: bool


@dataclass(frozen=True, slots=True)
class PulsarConsumersDetached:
    """The core detached these Pulsar consumers (their keys) from their subscription — an
    admin reset of its cursor, its deletion or its topic's: the Pulsar front tells them to
    reconnect."""

    consumers: tuple


@dataclass(frozen=True, slots=True)
class TransactionCheck:
    """Ask the producer on ``channel`` (of ``producer_group``) how the transaction of a
    half message ended (4.x: CHECK_TRANSACTION_STATE; 5.x: a RecoverOrphanedTransaction
    Command on its Telemetry stream). ``record``: the half message as the producer is
    shown it — under its real topic and queue; ``queue_offset`` and
    ``commit_log_offset``: where this check's copy is stored in the half topic (the
    producer names them in its answer); ``offset_msg_id``: that copy's id."""

    channel: Channel
    producer_group: str
    transaction_id: str
    record: Any
    queue_offset: int
    commit_log_offset: int
    offset_msg_id: str


@dataclass(frozen=True, slots=True)
class LiteUnsubscribed:
    """The broker ended a lite consumer's subscription of ``lite_topic`` (the lite topic
    expired, or another client of its exclusive group added it): the client should forget
    it (5.x: a NotifyUnsubscribeLiteCommand)."""

    client_id: str
    group: str
    lite_topic: str


@dataclass(frozen=True, slots=True)
class VisibleAgain:
    """A delivery of ``group`` in ``topic`` (its stored topic) became visible again in
    place — a FIFO group's or a lite topic's message whose invisible time ended, or that
    was given back — without a copy stored anywhere (so no store event says so): a
    receive held for the group may take it now."""

    group: str
    topic: str


Notification = (PullReady | ConsumerIdsChanged | DispatchReady | PulsarTopicsChanged | PulsarConsumersDetached
                | TransactionCheck | LiteUnsubscribed | VisibleAgain)


class Notifier:
    """Hands each notification to the subscribers of its kind, in subscription order."""

    def __init__(self) -> None:
        self._by_kind: dict[type, list[Callable[[Any], None]]] = {}

    def subscribe(self, fn: Callable[[Any], None], kinds: tuple[type, ...]) -> Callable[[], None]:
        """Call ``fn(notification)`` for every notification of ``kinds``; returns the
        function that stops it."""
        for kind in kinds:
            self._by_kind.setdefault(kind, []).append(fn)

        def stop() -> None:
            for kind in kinds:
                fns = self._by_kind.get(kind, [])
                if fn in fns:
                    fns.remove(fn)
        return stop

    def wants(self, kind: type) -> bool:
        return bool(self._by_kind.get(kind))

    def __call__(self, notification) -> None:
        by_kind, kind = self._by_kind, notification.__class__
        if kind in by_kind:                 # (``in`` and ``[]``: every answered pull)
            for fn in by_kind[kind]:
                fn(notification)
