"""Fixtures: `rocketmq-emulator serve` subprocesses (virtual clock unless a test says
otherwise) and RemoteBrokers that are closed after the test. Every test uses its own
topics and groups, so one virtual-clock server serves the whole module."""
from __future__ import annotations

import itertools

import pytest

from rocketmq_emulator.client_sdk import RemoteBroker
from tests.support.processes import EmulatorProcess
from tests.support.serve_fixtures import server  # noqa: F401  (one virtual-clock serve per module)

_names = itertools.count(1)


@pytest.fixture
def own_server(tmp_path):
    """A `serve` of this test alone (for tests that kill it)."""
    proc = EmulatorProcess(tmp_path / "store", "--clock", "virtual").start()
    yield proc
    proc.kill()


@pytest.fixture
def remote(server):
    remotes = []

    def make(address=None):
        r = RemoteBroker(address or server.address)
        remotes.append(r)
        return r
    yield make
    for r in remotes:
        r.close()


@pytest.fixture
def unique():
    """unique("T") -> "T7": topic and group names no other test of the session uses."""
    return lambda prefix: f"{prefix}{next(_names)}"
