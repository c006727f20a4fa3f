"""Config changes cost O(1) each and survive kill -9 (issue 34, item 8). Before, every
auto-created group rewrote the whole subscriptionGroup.json (O(groups) per change, 1,000
new 5.x groups 8.65 s of server CPU); now each change is one journal line and the
documents are written whole at the flush, with the same guarantee: an answered change
is in the OS before the answer, so a killed broker keeps it."""
import json
import signal

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store import MessageStore

from ..support.processes import EmulatorProcess
from ..support.remoting import RawClient
from .wire import WireClient


class CountingStore:
    """Counts the bytes the store is asked to write for configs, per kind of write."""

    def __init__(self, store):
        self.whole = self.whole_bytes = 0
        self.line_sizes: list[int] = []
        real_doc, real_line = store.save_config, getattr(store, "save_config_changes", None)

        def doc(name, obj):
            self.whole += 1
            self.whole_bytes += len(json.dumps(obj))
            return real_doc(name, obj)

        def line(name, ops):
            self.line_sizes.append(len(json.dumps(ops)))
            return real_line(name, ops)
        store.save_config, store.save_config_changes = doc, line


def test_creating_n_groups_writes_o_of_n_bytes_and_no_whole_document(tmp_path):
    core = BrokerCore.open(tmp_path / "store", VirtualClock(), BrokerConfig())
    client = WireClient(core)
    counted = CountingStore(core.store)
    n = 300
    for i in range(n):                        # each heartbeat auto-creates a group and its %RETRY% topic
        assert client.heartbeat(f"group-{i:04d}", ()).code == 0
    assert counted.whole == 0                 # nothing rewritten whole before the flush
    assert len(counted.line_sizes) == 2 * n   # one line per change: the group, its retry topic
    # each line the size of one entry, whatever the table's size (before: the whole table)
    assert max(counted.line_sizes) < 400 and max(counted.line_sizes) - min(counted.line_sizes[::2]) < 10
    core.flush()
    assert counted.whole == 2                 # the flush writes each document once
    groups = core.store.load_config("subscriptionGroup")["subscriptionGroupTable"]
    assert len(groups) == n and not (tmp_path / "store" / "config" / "subscriptionGroup.changes").exists()
    core.close()


def test_a_reopened_store_has_every_recorded_change_and_drops_a_torn_last_line(tmp_path):
    core = BrokerCore.open(tmp_path / "store", VirtualClock(), BrokerConfig())
    client = WireClient(core)
    client.heartbeat("kept", ())
    client.call(RQ.UPDATE_AND_CREATE_TOPIC, {"topic": "Orders", "readQueueNums": 8, "writeQueueNums": 8, "perm": 6})
    client.call(RQ.DELETE_SUBSCRIPTIONGROUP, {"groupName": "kept"})
    client.heartbeat("kept-again", ())
    core.store.crash()                        # no flush: only the journal has them
    journal = tmp_path / "store" / "config" / "topics.changes"
    with journal.open("ab") as f:             # a line the crash cut short (never answered)
        f.write(b'[["set",["topicConfigTable","Half"],{"topicName":"Ha')
    again = BrokerCore.open(tmp_path / "store", VirtualClock(), BrokerConfig())
    assert again.topics.get("Orders").read_queue_nums == 8
    assert again.topics.get("Half") is None
    assert "kept" not in again.groups.table and "kept-again" in again.groups.table
    assert again.topics.data_version == core.topics.data_version
    again.close()


def test_an_in_memory_store_applies_its_changes_too():
    store = MessageStore(None)
    store.save_config("doc", {"t": {"a": 1}, "dataVersion": {"counter": 1}})
    store.save_config_changes("doc", [["set", ["t", "b"], 2], ["set", ["dataVersion", "counter"], 2]])
    store.save_config_changes("doc", [["del", ["t", "a"]]])
    assert store.load_config("doc") == {"t": {"b": 2}, "dataVersion": {"counter": 2}}
    store.save_config("doc", {"t": {}})       # a whole write replaces the changes
    assert store.load_config("doc") == {"t": {}}


def test_answered_config_changes_survive_kill_9(tmp_path):
    """serve, groups and topics created over the wire, SIGKILL at once (long before a
    flush), a restart on the same directory: every answered change is there."""
    data = tmp_path / "data"
    conf = tmp_path / "broker.conf"
    conf.write_text("flushIntervalCommitLog=3600000\n")         # no flush during the test
    server = EmulatorProcess(data, "--config", str(conf)).start()
    client = RawClient(server.port)
    try:
        for i in range(50):
            beat = {"clientID": f"127.0.0.1@c{i}", "producerDataSet": [], "consumerDataSet": [
                {"groupName": f"auto-{i}", "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                 "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "subscriptionDataSet": []}]}
            assert client.call(RemotingCommand.request(RQ.HEART_BEAT, None, json.dumps(beat).encode())).code == 0
        made = client.call(RemotingCommand.request(RQ.UPDATE_AND_CREATE_TOPIC, {
            "topic": "Orders", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}))
        assert made.code == 0
    finally:
        client.close()
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(10)
    core = BrokerCore.open(data, VirtualClock(), BrokerConfig())
    try:
        assert {f"auto-{i}" for i in range(50)} <= set(core.groups.table)
        assert {f"%RETRY%auto-{i}" for i in range(50)} <= set(core.topics.table)
        assert core.topics.get("Orders").read_queue_nums == 2
    finally:
        core.close()
