"""Small value types shared by the core and its processors."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Channel", "ConsumeMessageContext"]


@dataclass(eq=False, slots=True)
class Channel:
    """One client connection as the core sees it."""

    id: int
    remote: str
    client_id: str | None = None
    closed: bool = False
    language: str = "JAVA"          # what the client's heartbeat said it is (connection lists show it)
    version: int = 0
    owner: Any = None               # the front that opened it (notifications for it go there)
    dialect: str | None = None      # the protocol its client speaks, as fault rules name it ("4.x", ...)

    def __repr__(self) -> str:
        return f"Channel({self.id}, {self.remote})"


@dataclass(frozen=True, slots=True)
class ConsumeMessageContext:
    """What the send-back hook (RocketMQ's consumeMessageAfter) receives."""

    consumer_group: str
    topic: str                  # originTopic from the request
    msg_id: str | None          # originMsgId (the client's UNIQ_KEY), may be None
    commit_log_offset: int
    status: str                 # SEND_BACK, SEND_BACK_TO_DLQ or FAILED
    success: bool
    reconsume_times: int        # of the new copy
    delay_level: int            # level chosen (0 for the DLQ)
    new_topic: str | None       # %RETRY%<group> or %DLQ%<group>
