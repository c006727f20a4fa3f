"""`topic create`'s bounds are the broker's (issue 47's review): --queues takes what a
topic may have (topics.QUEUE_NUMS_MAX) and --partitions what a Pulsar topic may have
(pulsar_topics.MAX_PARTITIONS), refused past it before anything is sent, in one line
with exit 2; moving the broker's bound moves the CLI's with it (one place decides)."""
from __future__ import annotations

import pytest

import rocketmq_emulator.broker.pulsar_model.topics as pulsar_topics
import rocketmq_emulator.broker.rocketmq_model.topics as topics
from rocketmq_emulator.broker.cli.main import main

NOWHERE = "127.0.0.1:1"         # nothing is sent: a refused bound stops the command first


@pytest.mark.parametrize("argv, says", [
    (["T", "--queues", "1025"], "argument --queues: must be from 1 to 1024, got 1025"),
    (["T", "--pulsar", "--partitions", "1025"], "argument --partitions: must be from 1 to 1024, got 1025"),
])
def test_past_the_brokers_bound_is_one_line_and_exit_2(capsys, argv, says):
    assert main(["topic", "create", *argv, "--server", NOWHERE]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err


def test_the_bounds_are_the_brokers_own(monkeypatch, capsys):
    monkeypatch.setattr(topics, "QUEUE_NUMS_MAX", 16)
    monkeypatch.setattr(pulsar_topics, "MAX_PARTITIONS", 8)
    assert main(["topic", "create", "T", "--queues", "17", "--server", NOWHERE]) == 2
    assert "argument --queues: must be from 1 to 16, got 17" in capsys.readouterr().err
    assert main(["topic", "create", "T", "--pulsar", "--partitions", "9", "--server", NOWHERE]) == 2
    assert "argument --partitions: must be from 1 to 8, got 9" in capsys.readouterr().err
