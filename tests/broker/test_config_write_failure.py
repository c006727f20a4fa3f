"""A topic/group config write that fails (disk full, read-only directory) — issue 17,
item 5, broker side. Before: the write ran outside the request's error handling, so its
OSError escaped BrokerCore.handle; the TCP adapter's data_received raised, asyncio
closed that connection without a log line (it logs OSErrors only in debug mode), and
as the configs stayed dirty every later request on every connection retried the write
and was dropped the same way. Now the request that asked for the change is told
(SYSTEM_ERROR with the OS error), a change made as a side effect (a heartbeat creating
a group) is kept in memory and written at the next flush, one log line says so, and
every other request is served."""
import errno
import json
import logging

import pytest

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.delay_scheduler import VirtualClock

from ..support.remoting import RawClient, ServerThread
from .wire import WireClient


class FullDisk:
    """Replaces the store's config writes (a whole document, a journal line): they raise
    ENOSPC while ``full``, else write."""

    def __init__(self, store):
        self.full = True
        self.attempts = 0
        for name in ("save_config", "save_config_changes"):
            setattr(store, name, self._failing(getattr(store, name)))

    def _failing(self, real):
        def write(name, obj):
            self.attempts += 1
            if self.full:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(name, obj)
        return write


def real_writes(store):
    for name in ("save_config", "save_config_changes"):
        store.__dict__.pop(name, None)


def create_topic(client, topic, queues=4):
    return client.call(RQ.UPDATE_AND_CREATE_TOPIC, {"topic": topic, "readQueueNums": queues,
                                                    "writeQueueNums": queues, "perm": 6})


@pytest.fixture
def disk_core(tmp_path):
    core = BrokerCore.open(tmp_path / "store", VirtualClock(), BrokerConfig())
    yield core
    real_writes(core.store)                                 # the real ones again, so close() can write
    core.close()


def test_a_failed_topic_write_is_reported_and_the_topic_not_half_created(disk_core, caplog):
    client = WireClient(disk_core)
    assert create_topic(client, "Orders").code == RC.SUCCESS
    disk = FullDisk(disk_core.store)
    with caplog.at_level(logging.INFO, logger="broker"):
        resp = create_topic(client, "Payments")
        again = create_topic(client, "Orders", queues=8)
    assert resp.code == RC.SYSTEM_ERROR and "No space left on device" in resp.remark
    assert again.code == RC.SYSTEM_ERROR
    assert disk_core.topics.get("Payments") is None          # refused means not applied
    assert disk_core.topics.get("Orders").read_queue_nums == 4
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(errors) == 1 and errors[0].exc_info is None   # one line for the failure streak
    assert "topics" in errors[0].getMessage() and "No space left" in errors[0].getMessage()
    disk.full = False
    assert create_topic(client, "Payments").code == RC.SUCCESS
    assert "Payments" in disk_core.store.load_config("topics")["topicConfigTable"]


def test_a_side_effect_change_is_kept_and_written_at_the_next_flush(disk_core, caplog):
    client = WireClient(disk_core)
    assert create_topic(client, "T").code == RC.SUCCESS
    disk = FullDisk(disk_core.store)
    with caplog.at_level(logging.INFO, logger="broker"):
        beat = client.heartbeat("billing", ("T",))          # auto-creates the group and %RETRY%billing
        sent = client.send("T", b"still served")
        records = client.pull_records("billing", "T")
        tried = disk.attempts
        for _ in range(5):                                   # requests that change nothing do not retry
            client.pull("billing", "T", 1)
    assert beat.code == RC.SUCCESS and sent.code == RC.SUCCESS
    assert [r.body for r in records] == [b"still served"]
    assert disk.attempts == tried
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1
    disk_core.flush()                                        # disk still full: flush goes on
    disk.full = False
    with caplog.at_level(logging.INFO, logger="broker"):
        disk_core.flush()
    assert "billing" in disk_core.store.load_config("subscriptionGroup")["subscriptionGroupTable"]
    assert "%RETRY%billing" in disk_core.store.load_config("topics")["topicConfigTable"]
    assert any("written" in r.getMessage() for r in caplog.records if r.levelno == logging.INFO)


def test_flush_still_persists_offsets_when_the_config_write_fails(disk_core):
    client = WireClient(disk_core)
    create_topic(client, "T")
    client.heartbeat("billing", ("T",))
    client.send("T")
    FullDisk(disk_core.store)
    client.heartbeat("auditing", ("T",))                      # a pending config change
    disk_core.record_offset_commit("billing", "T", 0, 1)
    disk_core.flush()                                        # must not raise
    assert disk_core.store.query_offset("billing", "T", 0) == 1


def test_over_tcp_a_failed_config_write_drops_nothing(tmp_path):
    core = BrokerCore.open(tmp_path / "store", VirtualClock(), BrokerConfig())
    server = ServerThread(core)
    a, b = RawClient(server.port), RawClient(server.port)
    try:
        server.call_in_loop(lambda: FullDisk(core.store))
        refused = a.call(RemotingCommand.request(RQ.UPDATE_AND_CREATE_TOPIC, {
            "topic": "Orders", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}))
        assert refused.code == RC.SYSTEM_ERROR and "No space left on device" in refused.remark
        beat = {"clientID": "127.0.0.1@b", "producerDataSet": [], "consumerDataSet": [
            {"groupName": "billing", "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
             "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "subscriptionDataSet": []}]}
        for client in (b, a, b):
            assert client.call(RemotingCommand.request(RQ.HEART_BEAT, None, json.dumps(beat).encode())).code == 0
            route = client.call(RemotingCommand.request(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}))
            assert route.code == RC.SUCCESS
    finally:
        a.close()
        b.close()
        server.stop()
        real_writes(core.store)
        core.close()
