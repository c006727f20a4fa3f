"""The store's one exception type.

Bad *input* to ``put`` is never an exception (it is a PutStatus). StoreError is for
things a caller cannot fix by retrying the call: the root is a file, another live store
holds the root, the directory belongs to something else, the segments on disk do not
fit together, a config document is unreadable, or the store is closed.
"""
from __future__ import annotations

__all__ = ["StoreError"]


class StoreError(Exception):
    """The store cannot be opened or used; the message says why and where."""
