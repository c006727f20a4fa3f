"""Fixtures shared by the broker tests: a core on the in-memory store and a VirtualClock,
and a wire-level client of it."""
import pytest

from broker.core import BrokerCore
from delay_scheduler import VirtualClock

from .wire import WireClient


@pytest.fixture
def core():
    c = BrokerCore.in_memory(VirtualClock())
    yield c
    c.close()


@pytest.fixture
def client(core):
    return WireClient(core)
