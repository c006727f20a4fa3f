"""Fixtures shared by the broker tests: a core on the in-memory store and a VirtualClock,
and a wire-level client of it."""
import pytest

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.delay_scheduler import VirtualClock

from .wire import WireClient


@pytest.fixture
def core():
    c = BrokerCore.in_memory(VirtualClock())
    yield c
    c.close()


@pytest.fixture
def client(core):
    return WireClient(core)
