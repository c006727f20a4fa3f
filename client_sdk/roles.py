"""What the SDK's services need of the client that owns them, as typed interfaces.

A push consumer owns its rebalancer and its consume service; a producer owns its
transactions; a client instance holds both kinds of client. Each of those parts names
the owner's members it uses here, not the owner's class, so no part imports the class
that imports it (the import graph of the SDK has no circle, even for type checking).
``PushConsumer`` and ``Producer`` satisfy these structurally; nothing subclasses them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:        # value types only: none of these imports a client back
    from .message import Message, MessageExt, MessageQueue
    from .process_queue import ProcessQueue
    from .runtime import ClientRuntime
    from .subscription import SubscriptionData

__all__ = ["ConsumerRole", "ProducerRole"]


class ConsumerRole(Protocol):
    """A push consumer as its rebalancer, consume services and client instance see it."""

    group: str
    runtime: "ClientRuntime"
    instance: object                      # its ClientInstance (route table, api, client id)
    stats: object
    offset_store: object
    subscriptions: "dict[str, SubscriptionData]"
    process_queues: "dict[MessageQueue, ProcessQueue]"
    broadcasting: bool
    orderly: bool
    strict: bool
    retry_topic: str
    consume_timeout: float
    consume_message_batch_max_size: int
    suspend_current_queue_time_millis: int
    max_reconsume_times_orderly: int
    warned_no_route: set[str]             # topics whose missing route was logged once

    def now_ms(self) -> int: ...
    def consumer_data(self) -> dict: ...
    def do_rebalance(self) -> None: ...
    def persist_offsets(self) -> None: ...
    def reset_offsets(self, offsets: "dict[MessageQueue, int]") -> None: ...
    def compute_pull_from_where(self, mq: "MessageQueue") -> int: ...
    def lock_one(self, mq: "MessageQueue") -> bool: ...
    def start_pulling(self, mq: "MessageQueue", pq: "ProcessQueue", next_offset: int) -> None: ...
    def send_message_back(self, msg: "MessageExt", delay_level: int = 0, broker_name: str | None = None) -> bool: ...
    def send_back_as_normal_message(self, msg: "MessageExt", reconsume_time: int | None = None) -> bool: ...
    def report_error(self, exc: BaseException) -> None: ...


class ProducerRole(Protocol):
    """A producer as its transactions and its client instance see it."""

    group: str
    transaction_checker: Callable | None

    def send_raw(self, topic: str, body: bytes, flag: int, properties: dict[str, str], *args, **kwargs): ...
    def send_message_in_transaction(self, msg: "Message", local_transaction: Callable, arg: object = None): ...
    def end_transaction_oneway(self, cmd) -> None: ...
    def check_transaction_state(self, cmd, msg) -> None: ...
