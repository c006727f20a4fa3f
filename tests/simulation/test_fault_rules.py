"""Fault rules in simulation scenarios (issue 38): given as data, checked with the rest of
the scenario, installed on the simulated broker(s), applied by the fronts the simulated
clients use, deterministic from the seed, counted per rule in the summary — and the
invariants hold with them, duplicates only where a rule made them."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import PushConsumer
from rocketmq_emulator.client_sdk.simulation import (START_MS, BrokerWindow, GroupSpec, ProducerSpec, Scenario,
                                                     Simulation, TopicSpec, WriteOffWindow, run_simulation)
from rocketmq_emulator.client_sdk.simulation import fault_rules
from rocketmq_emulator.client_sdk.simulation.fault_rules import FaultSpec, fault_spec
from rocketmq_emulator.client_sdk.simulation.scenario import ScenarioError
from rocketmq_emulator.client_sdk.simulation.strategies import scenarios

from .conftest import W1, commit_log_bytes, small
from .test_invariants import CommitsOnArrival, LosesSendBacks

MINUTE = 60_000


def kinds(result):
    return {v.invariant for v in result.violations}


def applied(result) -> list[int]:
    return [rule["applied"] for rule in result.summary()["faults"]]


# -- the scenario's faults list ----------------------------------------------------------------
def test_json_and_python_give_the_same_rules():
    data = {"seed": 3, "messages": 50, "duration": "30m", "faults": [
        {"operation": "send", "action": "drop", "stored": True, "probability": 0.1},
        {"operation": "pull", "action": "delay", "delay": "5s", "window": ["1m", "5m"], "group": "SimGroup"},
        {"operation": "ack", "action": "refuse", "times": 3, "window": {"start": 0, "end": "10m"}}]}
    from_json = Scenario.from_dict(data)
    from_python = Scenario(seed=3, messages=50, duration_ms=30 * MINUTE, faults=(
        fault_spec("send", "drop", stored=True, probability=0.1),
        fault_spec("pull", "delay", delay="5s", window=("1m", "5m"), group="SimGroup"),
        {"operation": "ack", "action": "refuse", "times": 3, "window": (0, 10 * MINUTE)}))
    assert from_json == from_python
    assert from_json.faults[1] == FaultSpec("pull", "delay", group="SimGroup", window_ms=(MINUTE, 5 * MINUTE),
                                            delay_ms=5000)
    assert from_json.faults[0].to_dict() == {"operation": "send", "action": "drop", "probability": 0.1,
                                             "stored": True}


@pytest.mark.parametrize("entry, says", [
    ({"operation": "sned", "action": "drop"}, "faults[0]: operation: 'sned' is not one of"),
    ({"operation": "send", "action": "duplicate"}, "faults[0]: action: duplicate does not apply to send"),
    ({"operation": "send", "action": "drop", "probability": 1.5}, "faults[0]: probability: a number from 0 to 1"),
    ({"operation": "pull", "action": "delay"}, "faults[0]: delay: a delay action needs a duration > 0"),
    ({"operation": "pull", "action": "delay", "delay": "-5s"}, "faults[0]: delay: bad duration"),
    ({"operation": "pull", "action": "refuse", "times": 0}, "faults[0]: times: a whole number >= 1"),
    ({"operation": "pull", "action": "refuse", "stored": True}, "faults[0]: stored: only a dropped send"),
    ({"operation": "pull", "action": "refuse", "window": ["5m", "1m"]}, "faults[0]: window: its end must come"),
    ({"operation": "pull", "action": "refuse", "window": ["40m", "50m"]}, "faults[0]: window: it starts at 40m, "
                                                                          "after the end of the run"),
    ({"operation": "pull", "action": "refuse", "window": "1m"}, "faults[0]: window: START..END"),
    ({"operation": "pull", "action": "refuse", "colour": "red"}, "faults[0]: unknown field(s) colour"),
    ({"operation": "pull"}, "faults[0]: action: missing"),
    ("send:drop", "faults[0]: a fault rule is an object"),
    ({"operation": "pull", "action": "refuse", "group": "Nobody"}, "faults[0]: group: 'Nobody' is not a group"),
    ({"operation": "pull", "action": "refuse", "topic": "Elsewhere"}, "faults[0]: topic: 'Elsewhere' is not a "
                                                                      "topic"),
    ({"operation": "pull", "action": "refuse", "broker": "broker-b"}, "faults[0]: broker: no broker named"),
    ({"operation": "route", "action": "refuse", "dialect": "5.x"}, "faults[0]: dialect: the simulated 5.x groups"),
    ({"operation": "pull", "action": "refuse", "dialect": "klingon"}, "faults[0]: dialect: 'klingon' is not one"),
    ({"operation": "send", "action": "refuse", "error": "NOPE"}, "faults[0]: error: 'NOPE' is not a 4.x response code"),
    ({"operation": "send", "action": "refuse", "error": 2.5}, "faults[0]: error: a code, as a number or a name"),
])
def test_a_bad_rule_is_one_line_naming_the_field(entry, says):
    with pytest.raises(ScenarioError) as caught:
        Scenario.from_dict({"messages": 10, "duration": "30m", "faults": [entry]})
    assert str(caught.value).startswith(says) and "\n" not in str(caught.value)


def test_rules_that_could_only_match_what_no_front_or_consumer_asks_are_refused():
    five = GroupSpec(name="Five", protocol="5.x")
    nacks = GroupSpec(name="Nacks", protocol="pulsar")
    one_queue = (TopicSpec(queues=1),)
    with pytest.raises(ScenarioError, match="faults\\[0\\]: group: Five is a 5.x group, whose simulated consumer "
                                            "never meets this send_back rule"):
        Scenario(messages=10, groups=(five,), faults=(fault_spec("send-back", "refuse", group="Five"),))
    with pytest.raises(ScenarioError, match="faults\\[0\\]: dialect: the simulated 5.x groups would never meet "
                                            "this heartbeat rule"):
        Scenario(messages=10, groups=(five,), faults=(fault_spec("heartbeat", "drop", dialect="5.x"),))
    with pytest.raises(ScenarioError, match="faults\\[0\\]: group: Nacks is a pulsar group"):
        Scenario(messages=10, topics=one_queue, groups=(nacks,), faults=(fault_spec("pull", "drop", group="Nacks"),))
    with pytest.raises(ScenarioError, match="faults\\[0\\]: dialect: the simulated pulsar groups would never"):
        Scenario(messages=10, groups=(five,), faults=(fault_spec("send", "drop", dialect="pulsar"),))
    # a 5.x group's receives and acks are asked: accepted
    Scenario(messages=10, groups=(five,), faults=(fault_spec("ack", "drop", group="Five", dialect="5.x"),
                                                  fault_spec("pull", "hold", group="Five")))
    with pytest.raises(ScenarioError, match="refuse sends in a transactional run"):
        Scenario(messages=10, producers=(ProducerSpec(transactional=True),),
                 faults=(fault_spec("send", "drop", stored=True),))


def test_the_cli_takes_rules_and_refuses_a_bad_one_in_one_line_with_exit_2(tmp_path, capsys):
    args = ["simulate", "--messages", "100", "--duration", "10m", "--pattern", "w1", "--quiet", "--seed", "2"]
    assert main([*args, "--out", str(tmp_path / "a"), "--fault", "send:drop,stored,probability=0.2",
                 "--fault", '{"operation": "pull", "action": "delay", "delay": "5s", "window": ["10s", "2m"]}']) == 0
    text = capsys.readouterr().out
    assert "fault rule 0 (drop send (stored first) p=0.2): applied " in text
    assert "fault rule 1 (delay pull 5s 10s..2m): applied " in text and "every invariant held" in text
    for bad, says in (("send:explode", "action: 'explode' is not one of"),
                      ("send", "OPERATION:ACTION[,key=value...]"),
                      ("pull:refuse,times=often", "times: a number, got 'often'"),
                      ("pull:refuse,window=20m..30m", "window: it starts at 20m, after the end of the run")):
        assert main([*args, "--out", str(tmp_path / "b"), "--fault", bad]) == 2
        err = capsys.readouterr().err.strip()
        assert says in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "b").exists()


def test_a_scenario_file_with_faults_reports_each_rule_in_json(tmp_path, capsys):
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"messages": 150, "duration": "10m", "groups": [W1], "faults": [
        {"operation": "send", "action": "refuse", "times": 4},
        {"operation": "ack", "action": "drop", "probability": 0.5, "window": ["0s", "1m"]}]}))
    assert main(["simulate", "--scenario", str(path), "--out", str(tmp_path / "run"), "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    first, second = data["faults"]
    assert first == {"rule": 0, "describe": "refuse send 4 time(s)", "operation": "send", "action": "refuse",
                     "times": 4, "applied": 4, "matched": 4}
    assert second["applied"] > 0 and second["matched"] > second["applied"] and second["window_ms"] == [0, MINUTE]
    assert data["invariant_violations"] == 0 and data["accepted"] == 150


def test_without_rules_the_summary_has_no_faults_entry(store_dir):
    assert "faults" not in run_simulation(small(messages=30), store_dir).summary()


# -- what the rules do, and the invariants with them ---------------------------------------------
def test_a_send_dropped_after_store_is_stored_once_and_its_retry_is_the_only_duplicate(store_dir):
    scenario = small(messages=300, faults=(fault_spec("send", "drop", stored=True, probability=0.1),))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    (hits,) = applied(result)
    s = result.summary()
    # every dropped send was stored exactly once; its producer's retry stored the accepted copy
    assert hits > 10 and s["produced"] == result.accepted + hits == 300 + hits
    assert result.deliveries > 300 + 2 * 17 + 30     # the poison ladders, the fail-once retries, and duplicates


def test_a_duplicate_no_rule_made_is_caught(store_dir, monkeypatch):
    # the checker is not told that a dropped-after-store send duplicates: it flags the copies
    monkeypatch.setattr(fault_rules, "may_duplicate", lambda spec, protocol=None: False)
    scenario = small(messages=300, faults=(fault_spec("send", "drop", stored=True, probability=0.1),))
    result = run_simulation(scenario, store_dir)
    dups = [v for v in result.violations if v.invariant == "duplicate"]
    assert dups and "delivered again" in dups[0].message and "no fault rule that makes duplicates" in dups[0].message


class DeliversTwice(PushConsumer):
    """Planted bug: every 25th message is handed to the listener twice."""

    def register_message_listener(self, listener, orderly=False):
        def twice(msgs, ctx):
            verdict = listener(msgs, ctx)
            if msgs[0].reconsume_times == 0 and int(msgs[0].body[:8]) % 25 == 7:
                verdict = listener(msgs, ctx)
            return verdict
        super().register_message_listener(twice, orderly=orderly)


@pytest.mark.parametrize("rules", [(), (fault_spec("pull", "delay", delay="2s", probability=0.3),
                                        fault_spec("send", "refuse", times=5))])
def test_a_client_that_delivers_twice_is_caught_with_or_without_rules(store_dir, rules):
    result = Simulation(small(faults=rules), store_dir, consumer_class=DeliversTwice).run()
    dups = [v for v in result.violations if v.invariant == "duplicate"]
    numbers = sorted(int(v.message.split("#")[1].split()[0]) for v in dups)
    assert numbers == list(range(7, 200, 25))                 # 7, 32, ... 182 of 200
    assert all(n > 0 for n in applied(result)) if rules else "faults" not in result.summary()


@pytest.mark.parametrize("bug, invariant", [(CommitsOnArrival, "commit"), (LosesSendBacks, "lost")])
def test_planted_bugs_are_still_caught_with_faults_on(store_dir, bug, invariant):
    rules = (fault_spec("send", "drop", stored=True, probability=0.05), fault_spec("ack", "drop", probability=0.2),
             fault_spec("pull", "delay", delay="3s", window=("10s", "5m")), fault_spec("route", "refuse", times=3))
    result = Simulation(small(faults=rules), store_dir, consumer_class=bug).run()
    assert invariant in kinds(result) and all(n > 0 for n in applied(result))


def test_every_operation_faulted_keeps_every_invariant(store_dir):
    rules = (fault_spec("send", "refuse", probability=0.1), fault_spec("send", "delay", delay="1s", times=5),
             fault_spec("pull", "refuse", probability=0.1), fault_spec("pull", "drop", probability=0.05),
             fault_spec("pull", "duplicate", probability=0.2), fault_spec("send_back", "refuse", times=6),
             fault_spec("send_back", "delay", delay="1s", times=4), fault_spec("ack", "refuse", probability=0.3),
             fault_spec("heartbeat", "refuse", probability=0.5), fault_spec("route", "drop", probability=0.2))
    scenario = small(messages=300, groups=(GroupSpec(batch_size=3, consumers=2, **W1),), crashes_ms=(90_000,),
                     faults=rules)
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and all(n > 0 for n in applied(result)), applied(result)


def test_a_window_is_on_the_runs_clock(store_dir):
    # one message a second; every send refused from 60 s to 120 s: the producer's three
    # tries and the run's retry each second fail until the window ends
    scenario = small(messages=180, producers=(ProducerSpec(rate=1.0),), duration_ms=10 * MINUTE,
                     faults=(fault_spec("send", "refuse", window=("60s", "120s")),))
    result = run_simulation(scenario, store_dir)
    assert result.ok and result.accepted == 180
    assert result.refused_sends == 60 and applied(result) == [3 * 60]


class NotesDeliveryTimes(PushConsumer):
    times: list[int] = []

    def register_message_listener(self, listener, orderly=False):
        def noted(msgs, ctx):
            NotesDeliveryTimes.times.append(self.runtime.clock.now_ms())
            return listener(msgs, ctx)
        super().register_message_listener(noted, orderly=orderly)


def test_a_rule_without_a_window_lasts_the_duration_and_the_run_settles_without_it(store_dir):
    # every pull refused: nothing is consumed until the duration ends, then everything is
    scenario = small(duration_ms=5 * MINUTE, faults=(fault_spec("pull", "refuse"),))
    sim = Simulation(scenario, store_dir, consumer_class=NotesDeliveryTimes)
    result = sim.run()
    assert result.ok and result.settled and applied(result)[0] > 0
    assert result.summary()["succeeded"] == 198 and not sim.rules.open
    assert min(NotesDeliveryTimes.times) - START_MS >= 5 * MINUTE


def test_a_count_is_kept_across_a_crash(store_dir):
    scenario = small(crashes_ms=(20_000,), faults=(fault_spec("pull", "refuse", times=40),))
    sim = Simulation(scenario, store_dir)
    result = sim.run()
    assert result.ok and result.crashes == 1 and applied(result) == [40]
    assert sim.rules.hits(0) == 40 and len(sim.rules.placed[0]) == 2      # installed again after the crash


def test_a_cluster_rule_on_one_broker_sends_the_producer_to_the_other(store_dir):
    scenario = small(messages=200, brokers=2, faults=(fault_spec("send", "refuse", broker="broker-a"),
                                                      fault_spec("heartbeat", "drop", probability=0.2)))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    one, both = result.summary()["faults"]
    assert one["applied"] > 0 and "applied_by_broker" not in one
    assert set(both["applied_by_broker"]) == {"broker-a", "broker-b"} and sum(both["applied_by_broker"].values()) \
        == both["applied"]
    assert result.accepted == 200 and result.refused_sends == 0


class NotesFiveAttempts(Simulation):
    """Notes (message number, delivery attempt, time) of every 5.x delivery."""
    seen: list = []

    def _pop_listener(self, spec):
        listener = super()._pop_listener(spec)

        def noted(d):
            NotesFiveAttempts.seen.append((int(d.body[:8]), d.delivery_attempt, self.clock.now_ms()))
            return listener(d)
        return noted


def test_a_dropped_5x_ack_brings_the_message_back_with_the_next_attempt(store_dir):
    five = GroupSpec(name="Five", protocol="5.x", invisible_seconds=20)
    NotesFiveAttempts.seen = []
    sim = NotesFiveAttempts(small(messages=50, groups=(five,), faults=(fault_spec("ack", "drop", times=1),)),
                            store_dir)
    result = sim.run()
    assert result.ok, [str(v) for v in result.violations]
    assert result.deliveries == 51 and applied(result) == [1]
    (again,) = [n for n, attempt, _ in NotesFiveAttempts.seen if attempt == 2]
    first, second = [t for n, _, t in NotesFiveAttempts.seen if n == again]
    assert second - first >= 20_000                     # back when its invisible time ended


def test_5x_receive_and_ack_faults_keep_every_invariant(store_dir):
    five = GroupSpec(name="Five", protocol="5.x", invisible_seconds=20, batch_size=2, **W1)
    rules = (fault_spec("pull", "refuse", probability=0.2), fault_spec("pull", "drop", probability=0.1),
             fault_spec("pull", "delay", delay="30s", probability=0.1), fault_spec("pull", "duplicate", probability=0.2),
             fault_spec("ack", "refuse", probability=0.2, dialect="5.x"), fault_spec("ack", "delay", delay="25s",
                                                                                     probability=0.2),
             fault_spec("pull", "hold", group="Five", window=("2m", "4m")))
    scenario = small(groups=(five,), crashes_ms=(100_000,), settle_ms=8 * 60 * MINUTE, faults=rules)
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and all(n > 0 for n in applied(result))          # a hold counts the receives it held


def test_a_5x_consumer_that_loses_the_answer_of_a_delayed_receive_is_caught(store_dir, monkeypatch):
    # planted bug: a delayed receive's messages are never handed to the listener, and the
    # consumer does not say it held them back: they come back, but an attempt goes missing
    from rocketmq_emulator.client_sdk.simulation import pop_consumer
    monkeypatch.setattr(pop_consumer.PopConsumer, "_hand_over", lambda self, deliveries, times: None)
    monkeypatch.setattr(pop_consumer.PopConsumer, "__init__", _without_held_back(pop_consumer.PopConsumer.__init__))
    five = GroupSpec(name="Five", protocol="5.x", invisible_seconds=20, poison_every=10)
    result = run_simulation(small(groups=(five,), settle_ms=8 * 60 * MINUTE,
                                  faults=(fault_spec("pull", "delay", delay="5s", probability=0.3),)), store_dir)
    assert kinds(result) & {"lost", "attempts"}


def _without_held_back(init):
    def patched(self, spec, embedded, listener, on_held_back=None):
        init(self, spec, embedded, listener, None)
    return patched


@pytest.mark.parametrize("group", [GroupSpec(protocol="5.x", invisible_seconds=20, **W1),
                                   GroupSpec(protocol="pulsar", ack_timeout_seconds=10, **W1)])
def test_5x_and_pulsar_groups_keep_their_invariants_under_the_producers_faults(store_dir, group):
    scenario = small(topics=(TopicSpec(queues=1 if group.protocol == "pulsar" else 4),), groups=(group,),
                     settle_ms=8 * 60 * MINUTE, faults=(fault_spec("send", "drop", stored=True, probability=0.1),
                                                        fault_spec("send", "refuse", probability=0.2)))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and all(n > 0 for n in applied(result))


def test_retry_letter_groups_take_pulsar_rules_through_the_pulsar_front(store_dir):
    topic = "pulsar|public|default|Letters"
    group = GroupSpec(name="Letters", topic=topic, protocol="pulsar", retry_letters="increasing", **W1)
    scenario = small(topics=(TopicSpec(topic, 1),), producers=(ProducerSpec(topic=topic),), groups=(group,),
                     faults=(fault_spec("send", "drop", stored=True, dialect="pulsar", probability=0.3),))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert applied(result)[0] > 0 and result.summary()["produced"] == 200      # only retry letters were dropped
    with pytest.raises(ScenarioError, match="faults\\[0\\]: error: 'SYSTEM_BUSY' is not a Pulsar ServerError"):
        replace(scenario, faults=(fault_spec("send", "refuse", error="SYSTEM_BUSY"),))


# -- found by drawn rules --------------------------------------------------------------------------
SLOW_W1 = GroupSpec(consumers=2, batch_size=3, poison_every=10, fail_once_every=10, fail_once_remainder=5,
                    fail_probability=0.2, slow_probability=0.02)


@pytest.mark.parametrize("refused_by", ["a rule", "a cluster broker's write-off"])
def test_the_expiry_of_a_copy_the_client_published_itself_is_a_failure_at_level_3(store_dir, refused_by):
    # A refused send-back makes the client publish the retry copy itself, with the
    # delivery's properties, CONSUME_START_TIME included; the copies after it keep that
    # stale time, so the expiry scan sends one back (level 3) while it waits in the process
    # queue. The checker used to miss that failure and flag its retry as early (retry_delay),
    # with no rule too (a cluster broker's write-off refuses the send-back as well).
    if refused_by == "a rule":
        extra = dict(faults=(FaultSpec("send_back", "refuse", window_ms=(163, 120_163)),),
                     write_off=(WriteOffWindow(682, 3724),))
        seed = 2603364
    else:
        extra = dict(brokers=2, broker_write_off=(BrokerWindow("broker-a", 163, 120_163),))
        seed = 2603368
    scenario = Scenario(seed=seed, messages=45, duration_ms=24 * MINUTE, topics=(TopicSpec(queues=2),),
                        producers=(ProducerSpec(rate=10.0, body_size=269),), groups=(SLOW_W1,),
                        crashes_ms=(682, 1_000_001), **extra)
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled


# -- determinism ---------------------------------------------------------------------------------
def _rules_run(path, seed):
    rules = (fault_spec("send", "drop", stored=True, probability=0.1), fault_spec("pull", "refuse", probability=0.2),
             fault_spec("ack", "delay", delay="7s", probability=0.3, window=("30s", "4m")))
    result = run_simulation(small(seed=seed, crashes_ms=(45_000,), faults=rules), path)
    summary = {k: v for k, v in result.summary().items() if k not in ("wall_seconds", "store")}
    files = {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
             and "lock" not in p.name}
    return summary, files


def test_the_same_seed_gives_the_same_faults_summary_and_store_bytes(tmp_path):
    first, first_files = _rules_run(tmp_path / "a", 11)
    second, second_files = _rules_run(tmp_path / "b", 11)
    assert first == second and first["invariant_violations"] == 0
    assert first_files == second_files and commit_log_bytes(tmp_path / "a") == commit_log_bytes(tmp_path / "b")
    other, _ = _rules_run(tmp_path / "c", 12)
    assert [r["applied"] for r in other["faults"]] != [r["applied"] for r in first["faults"]]


# -- hypothesis ----------------------------------------------------------------------------------
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(scenarios(max_messages=40, rules=True))
def test_drawn_fault_rules_keep_every_invariant(tmp_path_factory, scenario):
    result = run_simulation(scenario, tmp_path_factory.mktemp("sim"))
    assert result.ok, (scenario.faults, [str(v) for v in result.violations])


def test_the_readme_fault_simulation_line_runs_as_written(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Guide: deterministic simulation", 1)[1]
    line = next(ln for ln in section.splitlines() if "--fault" in ln and ln.startswith(".venv/bin/"))
    args = line.split()[1:]
    args[args.index("/tmp/sim4")] = str(tmp_path / "out")
    script = Path(sys.executable).with_name("rocketmq-emulator")
    proc = subprocess.run([str(script), *args, "--json", "--quiet"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)
    assert printed["invariant_violations"] == 0 and printed["settled"]
    sends, pulls = printed["faults"]
    assert (sends["operation"], sends["action"], pulls["operation"], pulls["action"]) == ("send", "drop", "pull", "delay")
    assert sends["applied"] > 0 and pulls["applied"] > 0


# Found by a swarm (simulate --seeds 1..40 --pattern w1 --draw-faults --shrink), each shrunk
# to 1 message and 2 faults: seed 6 (send-backs delayed past the client's wait while the
# broker's writes are off: local retries up to reconsumeTimes 16), seed 31 (send-backs
# dropped, writes off: local retries 4..6, then the client's copy at 7 and the broker's
# ladder on from there).
LOCAL_RETRY_SCENARIOS = {
    6: {"write_off": [[164735, 276488]],
        "faults": [{"operation": "send_back", "action": "delay", "group": "SimGroup", "window": [41711, 295339],
                    "delay": 40000}]},
    31: {"write_off": [[66168, 113441]],
         "faults": [{"operation": "send_back", "action": "drop", "group": "SimGroup", "window": [88236, 121259]}]},
}


@pytest.mark.parametrize("seed", sorted(LOCAL_RETRY_SCENARIOS))
def test_a_dead_letter_after_local_retries_counts_the_clients_reconsume_times(store_dir, tmp_path, seed):
    """When a send-back and the client's own retry copy both fail, the client retries the
    same copy locally every 5 s, each time with reconsumeTimes + 1, as upstream's
    processConsumeResult does, and the copy it publishes next carries that count (one at
    maxReconsumeTimes is dead-lettered at once: handleRetryAndDLQ). Every reconsumeTimes
    is reached once, by a stored copy or a local retry: upstream's count, not a lost
    attempt, and the checker takes it (it reported 0..4 or 0..3, 7..16 as missing levels)."""
    path = tmp_path / f"seed{seed}.json"
    path.write_text(json.dumps({"seed": seed, "messages": 1, "duration": 300000,
                                "groups": [{"poison_every": 100, "fail_once_every": 10, "fail_once_remainder": 5}],
                                **LOCAL_RETRY_SCENARIOS[seed]}))
    result = Simulation(Scenario.load(path, seed=seed), store_dir).run()
    assert result.ok, [str(v) for v in result.violations]
    assert result.summary()["dead_lettered"] == 1


def test_a_level_skipped_by_a_local_retry_is_still_caught(store_dir, tmp_path, monkeypatch):
    """The client's count does not hide a level no copy and no local retry reached:
    planted, a local retry that adds 2 to reconsumeTimes is reported."""
    path = tmp_path / "seed31.json"
    path.write_text(json.dumps({"seed": 31, "messages": 1, "duration": 300000,
                                "groups": [{"poison_every": 100, "fail_once_every": 10, "fail_once_remainder": 5}],
                                **LOCAL_RETRY_SCENARIOS[31]}))
    send_back = PushConsumer.send_message_back

    def skipping(self, msg, *args, **kwargs):
        sent = send_back(self, msg, *args, **kwargs)
        if not sent:
            msg.reconsume_times += 1         # planted: the local retry's own + 1 comes on top
        return sent

    monkeypatch.setattr(PushConsumer, "send_message_back", skipping)
    result = Simulation(Scenario.load(path, seed=31), store_dir).run()
    assert any(v.invariant == "attempts" for v in result.violations), [str(v) for v in result.violations]
