"""Fixtures of the SDK's tests."""
from __future__ import annotations

import pytest


@pytest.fixture
def commands_made(monkeypatch) -> list:
    """The codes of the RemotingCommands built from now on (in process, none should be)."""
    from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand

    made = []
    real_init = RemotingCommand.__init__

    def counted(self, *args, **kwargs):
        made.append(args[0] if args else kwargs.get("code"))
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(RemotingCommand, "__init__", counted)
    return made
