"""Session confs set for the length of a block: the small-input settings of one
analysis, the local-relation threshold of one read."""
from __future__ import annotations

import threading
from contextlib import contextmanager

__all__ = ["session_conf"]

# Session confs are shared by every thread using the session; two threads changing
# them at once could leave one changed for good.
_CONF_LOCK = threading.RLock()


@contextmanager
def session_conf(spark, settings: dict[str, str]):
    """Set these session confs for the length of the block, then put back what was
    there (unset what was not). Holds a lock: one such block at a time per process."""
    with _CONF_LOCK:
        before = {k: spark.conf.get(k, None) for k in settings}
        for k, v in settings.items():
            spark.conf.set(k, v)
        try:
            yield spark
        finally:
            for k, v in before.items():
                if v is None:
                    spark.conf.unset(k)
                else:
                    spark.conf.set(k, v)
