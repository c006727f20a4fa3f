"""Fixtures: a RemotingServer in a thread (virtual or real clock) and raw-socket clients."""
from __future__ import annotations

import pytest

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.delay_scheduler import SystemClock, VirtualClock

from tests.support.remoting import RawClient, ServerThread  # noqa: F401


def _served(root, clock):
    core = BrokerCore.open(root, clock, BrokerConfig())
    srv = ServerThread(core)
    yield srv
    srv.stop()
    core.close()


@pytest.fixture
def virtual_server(tmp_path):
    yield from _served(tmp_path / "store", VirtualClock())


@pytest.fixture
def real_server(tmp_path):
    yield from _served(tmp_path / "store", SystemClock())


@pytest.fixture
def raw(virtual_server):
    clients = []

    def connect():
        c = RawClient(virtual_server.port)
        clients.append(c)
        return c
    yield connect
    for c in clients:
        c.close()
