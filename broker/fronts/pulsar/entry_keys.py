"""The key reader a broker's Pulsar compaction is built with, where one can be had: the
Pulsar entry codec's ``keys_of`` (entries.py) needs protobuf, which the ``pulsar`` extra
installs. Without it no Pulsar client can have written an entry through this install, and
the core compacts by a record's KEYS property (pulsar_model/compaction.py's default)."""
from __future__ import annotations

from typing import Callable

__all__ = ["pulsar_entry_keys"]


def pulsar_entry_keys() -> Callable | None:
    """``entries.keys_of``, or None when the pulsar extra is not installed."""
    try:
        from .entries import keys_of
    except ImportError:         # (protobuf missing: the pulsar extra)
        return None
    return keys_of
