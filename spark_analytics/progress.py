"""The progress lines of ``analyze`` (stderr, with the seconds since the command began).
Its own module: a command on the warm Spark server prints them without importing the
report's modules (Arrow, Spark)."""
from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """Progress lines on stderr while Spark works: elapsed seconds and the step."""

    def __init__(self, stream=None, enabled: bool = True) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def __call__(self, msg: str) -> None:
        if self.enabled:
            print(f"[analyze {time.perf_counter() - self.t0:6.1f}s] {msg}", file=self.stream, flush=True)
