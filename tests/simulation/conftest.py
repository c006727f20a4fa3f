"""Small scenarios for the simulation tests (a few hundred messages: well under a
second of wall time each, the whole 16-retry ladder included)."""
from __future__ import annotations

import pytest

from rocketmq_emulator.client_sdk.simulation import GroupSpec, Scenario

W1 = dict(poison_every=100, fail_once_every=10, fail_once_remainder=5)


def small(seed=1, messages=200, **kw) -> Scenario:
    kw.setdefault("groups", (GroupSpec(**W1),))
    kw.setdefault("duration_ms", 30 * 60_000)
    return Scenario(seed=seed, messages=messages, **kw)


def commit_log_bytes(store_dir) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((store_dir / "commitlog").iterdir()))


@pytest.fixture
def store_dir(tmp_path):
    return tmp_path / "store"
