"""What the core tells its fronts later, unasked: typed notifications, one per event a
front turns into its own wire message (``BrokerCore.take_notifications``). The core
never builds a wire message itself."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .core_types import Channel
from .operations import PullRequest, PullResult

__all__ = ["PullReady", "ConsumerIdsChanged", "Notification"]


@dataclass(frozen=True, slots=True)
class PullReady:
    """A held pull is answered (a message arrived for it, or its suspend time ended):
    ``result`` for the pull ``request`` the front held with ``context`` (its own record
    of the request: the 4.x front keeps the command, to reply with its opaque)."""

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


Notification = PullReady | ConsumerIdsChanged
