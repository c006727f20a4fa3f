"""Notice a Spark cluster that went away in the middle of an analysis.

On a standalone (or any cluster) master, a job whose executors are gone does not
fail: the scheduler waits for new ones, for ever ("Initial job has not accepted any
resources"). ``ExecutorWatchdog`` watches the application's executors from a thread;
when it has had none for ``grace_s`` seconds it cancels every job, so the action in
progress raises, and ``check`` turns that into one line (ClusterLostError, exit 1) naming why.
A local master has its executor inside the driver and is never watched; nor is a
Spark Connect session (the server, not this process, holds the application).
"""
from __future__ import annotations

import threading
import time

from .errors import ClusterLostError

__all__ = ["ExecutorWatchdog", "LOST_GRACE_S"]

LOST_GRACE_S = 20.0          # a worker's executor registers within seconds of the application


class ExecutorWatchdog:
    def __init__(self, spark, master: str | None, grace_s: float = LOST_GRACE_S, poll_s: float = 0.5) -> None:
        from .session import is_remote

        # A Spark Connect session has no SparkContext here: its server owns the cluster.
        self._sc = None if is_remote(spark) else spark.sparkContext
        self._master = "local" if self._sc is None else self._sc.master if master is None else master
        self.grace_s = grace_s
        self.poll_s = poll_s
        self.reason: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def watching(self) -> bool:
        return not self._master.startswith("local")

    def _executors(self) -> int:
        # getExecutorIds: the executors the scheduler holds now, the driver not counted
        return int(self._sc._jsc.sc().getExecutorIds().size())

    def _run(self) -> None:
        since = time.monotonic()
        while not self._stop.wait(self.poll_s):
            try:
                n = self._executors()
            except Exception:                      # the context is stopping: nothing left to watch
                return
            now = time.monotonic()
            if n > 0:
                since = now
            elif now - since >= self.grace_s:
                self.reason = (f"the Spark cluster at {self._master} has had no executors for {self.grace_s:g} s "
                               "(its workers went away or cannot run the application); the analysis was stopped")
                self._sc.cancelAllJobs()
                return

    def __enter__(self) -> "ExecutorWatchdog":
        if self.watching:
            self._thread = threading.Thread(target=self._run, name="spark-executor-watchdog", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if exc is not None and self.reason is not None:
            raise ClusterLostError(self.reason) from None
        return False
