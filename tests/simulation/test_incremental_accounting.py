"""The simulator keeps its accounting as records are stored (store.accounting.Ledger,
told of every put by the cores), never walking the log at the end (issue 37). The walk
stays the definition: on every kind of run — retries and dead letters, crashes,
orderly, 5.x, Pulsar (negative acks and retry letters), a cluster with a broker down —
the live books give exactly what walking the stores the run left gives, group by group."""
from __future__ import annotations

import pytest

from rocketmq_emulator.client_sdk.simulation import GroupSpec, Scenario, Simulation
from rocketmq_emulator.client_sdk.simulation.scenario import BrokerWindow, ProducerSpec, TopicSpec
from rocketmq_emulator.store import MessageStore
from rocketmq_emulator.store.accounting import account_message_stores, ledger_accounts

from .conftest import W1, small

LETTERS = "pulsar|public|default|Letters"
SCENARIOS = {
    "retries and dead letters, a crash": small(seed=3, groups=(GroupSpec(batch_size=2, fail_probability=0.1, **W1),),
                                               crashes_ms=(60_000,)),
    "orderly": small(seed=4, messages=120, groups=(GroupSpec(orderly=True, max_reconsume_times=3,
                                                             fail_probability=0.1),)),
    "poison ladder": small(seed=5, messages=40, groups=(GroupSpec(fail_probability=1.0),)),
    "5.x, a crash": small(seed=6, messages=150, groups=(GroupSpec(protocol="5.x", **W1),), crashes_ms=(30_000,),
                          settle_ms=8 * 3_600_000),
    "pulsar": small(seed=7, messages=150, topics=(TopicSpec(queues=1),),
                    groups=(GroupSpec(protocol="pulsar", fail_probability=0.1, slow_probability=0.05,
                                      ack_timeout_seconds=10),), crashes_ms=(40_000,)),
    "pulsar retry letters": small(seed=10, messages=100, topics=(TopicSpec(LETTERS, 1),),
                                  producers=(ProducerSpec(topic=LETTERS),),
                                  groups=(GroupSpec(protocol="pulsar", topic=LETTERS, retry_letters="increasing",
                                                    max_reconsume_times=3, **W1),)),
    "two groups, slow listeners": small(seed=8, messages=150, groups=(
        GroupSpec(name="A", **W1), GroupSpec(name="B", fail_probability=0.2, slow_probability=0.02))),
    "a cluster, a broker down": Scenario(seed=9, messages=200, duration_ms=30 * 60_000, brokers=2,
                                         groups=(GroupSpec(**W1),),
                                         broker_down=(BrokerWindow("broker-b", 10_000, 40_000),)),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_live_accounts_are_the_walked_ones(name, tmp_path):
    sim = Simulation(SCENARIOS[name], tmp_path / "store")
    result = sim.run()
    assert result.ok, result.violations
    assert sim.ledger is not None
    roots = [tmp_path / "store"] + sorted((tmp_path / "store" / "brokers").glob("*"))
    stores = [MessageStore(root) for root in roots]
    try:
        walked = account_message_stores(stores)
        assert ledger_accounts(sim.ledger, stores).to_dict() == walked.to_dict()
        assert result.summary()["produced"] == walked.produced and walked.produced > 0
        assert result.accounts == walked.summary()
    finally:
        for store in stores:
            store.close()


def test_a_store_that_held_records_before_is_walked(tmp_path):
    first = Simulation(small(seed=1, messages=50), tmp_path / "store").run()
    again = Simulation(small(seed=2, messages=50), tmp_path / "store")
    result = again.run()
    assert again.ledger is None                     # not every record was seen being stored
    assert result.accounts["produced"] == first.accounts["produced"] + 50
