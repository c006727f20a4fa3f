"""The ``rocketmq-emulator`` command line: ``main`` dispatches to one module per command
(serve, clock, topic/group, broker, dlq, message/status, offset) and to the commands the
packages above the broker register (simulate, snapshot, analyze)."""
from .main import main

__all__ = ["main"]
