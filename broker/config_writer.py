"""Writing topics.json and subscriptionGroup.json when they change.

Theory of operation: a config change (a topic created or updated, a group or a
%RETRY% topic auto-created) is applied in memory first. ``BrokerCore.handle`` writes it
right after the request that made it, and every flush writes whatever is still
pending. A write that fails (disk full, a read-only directory) must take nothing else
down: it is logged once per failure streak, the change stays in memory and pending, and
only a new change or the next flush tries again, so requests that change nothing never
pay for a failing write. ``save`` returns the error, so a request whose very purpose
was the change (UPDATE_AND_CREATE_TOPIC) can report it to its caller.
"""
from __future__ import annotations

import logging

__all__ = ["ConfigWriter"]

log = logging.getLogger("broker")


class ConfigWriter:
    def __init__(self, store, topics, groups) -> None:
        self._store = store
        self._documents = (("topics", topics), ("subscriptionGroup", groups))
        self.error: Exception | None = None     # the last write's failure, None once one works
        self._failed_versions: tuple[int, ...] | None = None

    @property
    def pending(self) -> bool:
        return any(manager.dirty for _, manager in self._documents)

    def _versions(self) -> tuple[int, ...]:
        return tuple(manager.data_version for _, manager in self._documents)

    def save_changes(self) -> Exception | None:
        """After a request: write what changed, unless exactly this state already
        failed to write (then the next change or flush tries again)."""
        if self.error is not None and self._versions() == self._failed_versions:
            return self.error
        return self.save()

    def save(self) -> Exception | None:
        """Write every changed document; returns the failure (logged) or None."""
        for name, manager in self._documents:
            if not manager.dirty:
                continue
            try:
                self._store.save_config(name, manager.to_json())
            except Exception as exc:    # a failed write must not escape into the request loop
                self._failed(name, exc)
                return exc
            manager.dirty = False
        if self.error is not None:
            log.info("topic and group configs written again (the last write had failed: %s)", self.error)
            self.error = self._failed_versions = None
        return None

    def _failed(self, name: str, exc: Exception) -> None:
        if self.error is None:      # one line per failure streak, not one per request
            if isinstance(exc, OSError):
                log.error("cannot write the %s config: %s; the change is kept in memory and written "
                          "again at the next change or flush", name, exc)
            else:
                log.exception("cannot write the %s config", name)
        self.error = exc
        self._failed_versions = self._versions()
