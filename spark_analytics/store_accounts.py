"""The store's accounting (store/accounting.py) over a store or snapshot directory on
disk, read with this package's fast segment scan: what ``analyze`` checks its Spark
tables against, and a handy command (``python -m ...spark_analytics.store_accounts DIR``)."""
from __future__ import annotations

import json
from pathlib import Path

from rocketmq_emulator.store.accounting import Accounts, account
from rocketmq_emulator.store.record_view import head

from rocketmq_emulator.store.store_dir import read_json, resolve_store

from .commitlog import list_segments, open_segment, scan_buffer

__all__ = ["account_store"]


def account_store(path: str | Path) -> Accounts:
    """``account`` over a store or snapshot directory: every good record of its commit
    log (up to a snapshot's cut, or the last complete record),
    config/consumerOffset.json and config/subscriptions.json."""
    sd = resolve_store(path)
    cut = int(sd.manifest["commitlog"]["max_offset"]) if sd.manifest else None

    def records():
        for seg in list_segments(sd.commitlog):
            if cut is not None and seg.base >= cut:
                break
            b, mv = open_segment(seg.path, None if cut is None else cut - seg.base)
            scan = scan_buffer(b, mv, seg.base)
            for pos in scan.starts.tolist():
                yield head(mv, pos)

    offsets = read_json(sd.config / "consumerOffset.json", {}) or {}
    subscriptions = read_json(sd.config / "subscriptions.json", {}) or {}
    return account(records(), offsets, subscriptions)


if __name__ == "__main__":  # pragma: no cover - handy from a shell
    import sys
    print(json.dumps(account_store(sys.argv[1]).to_dict(), indent=2))
