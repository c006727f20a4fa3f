"""Fixtures: a real mosquitto and `rocketmq-emulator serve` subprocesses bridged to it."""
from __future__ import annotations

import pytest

from tests.support.processes import EmulatorProcess, Mosquitto, free_port, wait_port  # noqa: F401


@pytest.fixture
def mosquitto(tmp_path):
    m = Mosquitto(tmp_path)
    m.start()
    yield m
    m.stop()


@pytest.fixture
def emulator(tmp_path):
    started = []

    def start(*args, data_dir=None):
        e = EmulatorProcess(data_dir or tmp_path / "store", *args).start()
        started.append(e)
        return e
    yield start
    for e in started:
        e.stop()
