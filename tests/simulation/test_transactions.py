"""Transactional producers in the simulator (issue 42): half messages ended as the seed
draws them — committed at once, rolled back, committed at the broker's check-back, never
answered (discarded after transactionCheckMax checks) — with the invariants: a committed
message is stored once and consumed, a rolled-back or discarded one never delivered; and
the run stays deterministic."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rocketmq_emulator.broker.rocketmq_model.transactions import TransactionService
from rocketmq_emulator.client_sdk.simulation import GroupSpec, ProducerSpec, Scenario, ScenarioError, run_simulation

from .conftest import W1, commit_log_bytes, small

MIX = dict(transactional=True, rollback_probability=0.2, commit_at_check_probability=0.2,
           never_answered_probability=0.1)


def tx(seed=7, messages=200, **kw) -> Scenario:
    kw.setdefault("producers", (ProducerSpec(rate=20, **MIX),))
    return small(seed=seed, messages=messages, **kw)


def test_every_end_happens_and_the_invariants_hold(tmp_path):
    result = run_simulation(tx(), tmp_path / "a")
    assert result.ok, result.violations
    assert result.settled
    t = result.transactions
    assert sum(t[end] for end in ("commit", "rollback", "at_check", "never")) == 200
    assert min(t["commit"], t["rollback"], t["at_check"], t["never"]) > 0
    # a message committed at a check was checked once; a never-answered one 15 times
    assert t["checks"] == t["at_check"] + 15 * t["never"]
    # only committed messages reach the topic; the W1 poison among them are dead-lettered
    assert result.summary()["produced"] == t["commit"] + t["at_check"]
    assert result.summary()["transactions"] == t


def test_with_a_crash_and_a_write_off_window_the_invariants_still_hold(tmp_path):
    from rocketmq_emulator.client_sdk.simulation import WriteOffWindow

    result = run_simulation(tx(seed=9, crashes_ms=(4_000,), write_off=(WriteOffWindow(2_000, 3_000),),
                               groups=(GroupSpec(batch_size=2, **W1),)), tmp_path / "a")
    assert result.crashes == 1 and result.refused_sends > 0
    assert result.ok, result.violations
    assert result.settled


def test_the_same_seed_writes_the_same_bytes_and_another_seed_others(tmp_path):
    a = run_simulation(tx(seed=5, crashes_ms=(3_000,)), tmp_path / "a")
    b = run_simulation(tx(seed=5, crashes_ms=(3_000,)), tmp_path / "b")
    c = run_simulation(tx(seed=6, crashes_ms=(3_000,)), tmp_path / "c")
    assert a.ok and b.ok and c.ok, a.violations + b.violations + c.violations
    assert commit_log_bytes(tmp_path / "a") == commit_log_bytes(tmp_path / "b")
    assert a.transactions == b.transactions
    assert commit_log_bytes(tmp_path / "a") != commit_log_bytes(tmp_path / "c")


def test_a_broker_that_commits_a_rollback_is_caught(tmp_path, monkeypatch):
    """The invariant is not a formality: a broker storing rolled-back messages fails it."""
    from rocketmq_emulator.broker.operations import Resolution

    real_end = TransactionService.end

    def end_committing_everything(self, req):
        if req.resolution is Resolution.ROLLBACK:
            req = type(req)(req.producer_group, req.transaction_id, Resolution.COMMIT, req.from_check,
                            req.commit_log_offset, req.queue_offset)
        return real_end(self, req)

    monkeypatch.setattr(TransactionService, "end", end_committing_everything)
    result = run_simulation(tx(messages=50), tmp_path / "a")
    caught = [v for v in result.violations if v.invariant == "transaction"]
    assert caught and any("was rolled back" in v.message for v in caught), result.violations


def test_a_broker_that_never_discards_is_caught(tmp_path, monkeypatch):
    """A broker that checks back forever (its transactionCheckMax ignored)."""
    from rocketmq_emulator.broker.rocketmq_model import transactions

    real_check = transactions.transaction_check
    monkeypatch.setattr(transactions, "transaction_check",
                        lambda props, first, **kw: real_check(props, first, **dict(kw, check_max=10**6)))
    result = run_simulation(tx(messages=50, settle_ms=30 * 60_000, groups=(GroupSpec(),)), tmp_path / "a")
    messages = [v.message for v in result.violations if v.invariant == "transaction"]
    assert any("more than transactionCheckMax 15" in m for m in messages), result.violations
    assert any("still wait for their producer" in m for m in messages), result.violations
    assert not result.settled


@pytest.mark.parametrize("producer, why", [
    (dict(rollback_probability=0.1), "is for transactional producers"),
    (dict(transactional=True, rollback_probability=1.5), "must be between 0 and 1"),
    (dict(transactional=True, rollback_probability=0.6, never_answered_probability=0.6), "add up to 1.2"),
    (dict(transactional="yes"), "must be true or false"),
])
def test_bad_transaction_settings_are_refused_with_one_line(producer, why):
    with pytest.raises(ScenarioError, match=why):
        Scenario.from_dict({"producers": [producer]})


def test_simulate_takes_transactions_on_the_command_line(tmp_path):
    def simulate(*extra):
        return subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "simulate", "--seed", "4",
                               "--messages", "120", "--duration", "10m", "--pattern", "w1", "--quiet", *extra],
                              capture_output=True, text=True, timeout=180)

    done = simulate("--transactions", "0.1,0.2,0.05", "--out", str(tmp_path / "a"), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["invariant_violations"] == 0 and summary["settled"]
    assert sum(summary["transactions"][k] for k in ("commit", "rollback", "at_check", "never")) == 120
    text = simulate("--transactions", "0.1,0.2,0.05", "--out", str(tmp_path / "b"))
    assert "transactions:" in text.stdout and "never answered (discarded)" in text.stdout
    bad = simulate("--transactions", "0.1,0.2", "--out", str(tmp_path / "c"))
    assert bad.returncode == 2 and "three probabilities" in bad.stderr and "Traceback" not in bad.stderr


def test_a_cluster_with_a_broker_down_checks_its_half_messages_once_it_is_back(tmp_path):
    from rocketmq_emulator.client_sdk.simulation import BrokerWindow

    result = run_simulation(tx(seed=2, brokers=2, broker_down=(BrokerWindow("broker-b", 3_000, 60_000),),
                               groups=(GroupSpec(fail_once_every=10),)), tmp_path / "a")
    assert result.ok, result.violations
    assert result.settled
    t = result.transactions
    # A check broker-b makes right after it is back, before the producer's next heartbeat
    # registers it there, asks nobody but counts (as upstream counts it): a never-answered
    # message may be seen by its producer fewer than 15 times, never more.
    assert t["at_check"] + 14 * t["never"] <= t["checks"] <= t["at_check"] + 15 * t["never"] and t["never"] > 0
