"""pytest fixtures around `rocketmq-emulator serve` subprocesses, for the test modules
that talk to a real server (import the fixture by name into a conftest or module)."""
from __future__ import annotations

import pytest

from .processes import EmulatorProcess

__all__ = ["server"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One virtual-clock `serve` per test module (tests use their own topics and groups)."""
    proc = EmulatorProcess(tmp_path_factory.mktemp("serve") / "store", "--clock", "virtual").start()
    yield proc
    proc.stop()
