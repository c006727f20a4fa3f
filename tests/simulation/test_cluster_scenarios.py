"""Cluster scenarios (issue 23): brokers behind one name server in the simulator, with
one broker's write permission off for a while, one broker down for a while, and
crashes - under the invariants; planted bugs are caught."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk.simulation import BrokerWindow, GroupSpec, run_simulation
from rocketmq_emulator.client_sdk.simulation.scenario import ScenarioError
from rocketmq_emulator.store import MessageStore, StoreConfig
from rocketmq_emulator.store.records import create_offset_msg_id

from .conftest import W1, commit_log_bytes, small

MIN = 60_000
FAULTS = dict(brokers=2, broker_write_off=(BrokerWindow("broker-a", 5 * MIN, 12 * MIN),),
              broker_down=(BrokerWindow("broker-b", 15 * MIN, 20 * MIN),))


def records(store_dir):
    store = MessageStore(store_dir, StoreConfig())
    try:
        return [store.look_message_by_offset(h.commit_log_offset) for h in store.heads()]
    finally:
        store.close()


def test_w1_over_two_brokers_with_faults_keeps_every_invariant(store_dir):
    result = run_simulation(small(messages=400, crashes_ms=(25 * MIN,), **FAULTS), store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled
    s = result.summary()
    assert (s["produced"], s["succeeded"], s["dead_lettered"]) == (400, 396, 4)
    assert s["send_backs"] == 40 + 4 * 17                    # 40 fail once, 4 poison: 16 retries + the DLQ
    a, b = records(store_dir), records(store_dir / "brokers" / "broker-b")
    originals = {"a": [r for r in a if r.topic == "SimTopic"], "b": [r for r in b if r.topic == "SimTopic"]}
    assert len(originals["a"]) + len(originals["b"]) == 400 and originals["a"] and originals["b"]
    # while broker-a was read-only its send-backs were refused: the clients published the
    # copies themselves, to broker-b, naming a message of broker-a
    a_host = create_offset_msg_id(a[0].store_host, 0)[:16]
    crossed = [r for r in b if r.topic in ("SCHEDULE_TOPIC_XXXX", "%RETRY%SimGroup")
               and r.properties.get("ORIGIN_MESSAGE_ID", "").startswith(a_host)]
    assert crossed


def test_the_same_seed_writes_the_same_bytes_on_every_broker(tmp_path):
    scenario = small(messages=150, groups=(GroupSpec(fail_probability=0.05, **W1),), crashes_ms=(8 * MIN,), **FAULTS)
    run_simulation(scenario, tmp_path / "a")
    run_simulation(scenario, tmp_path / "b")
    for where in ("", "brokers/broker-b"):
        assert commit_log_bytes(tmp_path / "a" / where) == commit_log_bytes(tmp_path / "b" / where)


def test_a_consumer_that_gives_up_on_a_stopped_broker_is_caught(store_dir, monkeypatch):
    """Plant the defect this issue found: an offset the consumer cannot persist to a
    stopped broker raising out of the rebalance, which then never takes that broker's
    queues back - its retries stop, and ``lost`` says so."""
    from rocketmq_emulator.client_sdk import offset_store

    def persist_or_raise(self, mq, off):
        self.api.update_consumer_offset_oneway(self.group, mq.topic, mq.queue_id, off, mq.broker_name)
    monkeypatch.setattr(offset_store.RemoteBrokerOffsetStore, "_send", persist_or_raise)
    result = run_simulation(small(messages=400, **FAULTS), store_dir)
    assert {v.invariant for v in result.violations} == {"lost"} and not result.settled


@pytest.mark.parametrize("kw, message", [
    (dict(brokers=0), "brokers must be >= 1"),
    (dict(brokers=2, broker_down=(BrokerWindow("broker-c", MIN, 2 * MIN),)), "names broker 'broker-c'"),
    (dict(broker_down=(BrokerWindow("broker-a", MIN, 2 * MIN),)), "broker_down needs a cluster"),
    (dict(brokers=2, broker_down=(BrokerWindow("broker-a", MIN, 3 * MIN), BrokerWindow("broker-b", 2 * MIN, 4 * MIN))),
     "every broker would be down"),
    (dict(brokers=2, groups=(GroupSpec(protocol="5.x"),)), "a cluster runs 4.x groups only"),
    (dict(brokers=2, broker_write_off=(BrokerWindow("broker-a", 40 * MIN, 50 * MIN),)), "after the end of the run"),
])
def test_a_cluster_scenario_that_cannot_run_is_one_line(kw, message):
    with pytest.raises(ScenarioError, match=message):
        small(**kw)


def test_the_cli_runs_a_cluster_and_refuses_bad_windows(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["simulate", "--seed", "3", "--messages", "300", "--duration", "20m", "--pattern", "w1",
                 "--brokers", "2", "--broker-write-off", "broker-a@2m..6m", "--broker-down", "broker-b@8m+3m",
                 "--out", str(out), "--json", "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["invariant_violations"] == 0 and summary["settled"]
    assert (out / "brokers" / "broker-b" / "commitlog").is_dir()
    for bad in (["--broker-down", "broker-b"], ["--broker-write-off", "broker-a@5m"], ["--brokers", "27"]):
        assert main(["simulate", "--messages", "10", "--out", str(tmp_path / "bad"), "--brokers", "2", *bad]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, err
