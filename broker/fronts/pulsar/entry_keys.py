"""The key reader a broker's Pulsar compaction is built with, where one can be had: the
Pulsar entry codec's ``keys_of`` (entries.py) needs protobuf, which the ``pulsar`` extra
installs. Without it no Pulsar client can have written an entry through this install, and
the core compacts by a record's KEYS property (pulsar_model/compaction.py's default).

The codec is loaded when compaction first reads a key, not when a broker is built: a
broker used only by RocketMQ clients (the SDK in process, ``simulate``) never pays for
importing protobuf (tens of ms of a process's start)."""
from __future__ import annotations

from importlib.util import find_spec
from typing import Callable

__all__ = ["pulsar_entry_keys"]


def pulsar_entry_keys() -> Callable | None:
    """``entries.keys_of`` (imported at its first call), or None when the pulsar extra is
    not installed."""
    try:
        if find_spec("google.protobuf") is None:
            return None
    except ImportError:         # (no google package at all)
        return None
    return _keys_of


def _keys_of(rec) -> list[tuple[str | None, bool]] | None:
    from .entries import keys_of
    return keys_of(rec)
