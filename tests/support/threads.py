"""A call run on a thread of its own, for a real client's blocking call (a long-poll
receive) that a test watches while it moves the broker's clock."""
from __future__ import annotations

import threading

__all__ = ["in_background"]


def in_background(fn):
    """Run ``fn`` on a daemon thread; (thread, results: [value] or [exception] once it ends)."""
    out = []

    def run():
        try:
            out.append(fn())
        except Exception as exc:
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out
