"""The message store: a RocketMQ-style commit log, consume queues, offsets (see API.md).

``store`` imports nothing of the project and never reads a clock.
"""
from .config import (ASYNC_FLUSH, DEFAULT_DELAY_LEVELS_MS, DEFAULT_MESSAGE_DELAY_LEVEL, SYNC_FLUSH, DelayTableError,
                     StoreConfig, parse_delay_table)
from .errors import StoreError, StoreWriteError
from .message_store import MessageStore
from .status import GetResult, GetStatus, PutResult, PutStatus, Recovery

__all__ = [
    "MessageStore",
    "StoreConfig",
    "StoreError",
    "StoreWriteError",
    "PutStatus",
    "GetStatus",
    "PutResult",
    "GetResult",
    "Recovery",
    "ASYNC_FLUSH",
    "SYNC_FLUSH",
    "DEFAULT_DELAY_LEVELS_MS",
    "DEFAULT_MESSAGE_DELAY_LEVEL",
    "DelayTableError",
    "parse_delay_table",
]
