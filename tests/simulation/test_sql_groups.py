"""SQL92 groups in simulation scenarios (GroupSpec.sql): the broker filters (4.x pull,
5.x pop), the checker knows from scenario.message_properties which messages each group
must end, and catches a group that gets one its selector does not take."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from rocketmq_emulator.broker.rocketmq_model.sql_filter import compile_sql
from rocketmq_emulator.client_sdk.simulation import GroupSpec, InvariantChecker, Scenario, run_simulation
from rocketmq_emulator.client_sdk.simulation.scenario import ScenarioError, message_properties
from rocketmq_emulator.client_sdk.simulation.strategies import scenarios

from .conftest import W1, small

EU_BIG = "region = 'eu' AND amount > 300"
FIVE = "amount IS NULL OR region IN ('asia')"


def test_sql_groups_beside_a_plain_one_keep_every_invariant(store_dir):
    scenario = small(messages=300, groups=(GroupSpec(name="EuBig", sql=EU_BIG, **W1),
                                           GroupSpec(name="Five", protocol="5.x", sql=FIVE, fail_once_every=10,
                                                     fail_once_remainder=5),
                                           GroupSpec(name="All")), settle_ms=8 * 3600_000)
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    taken = {name: [n for n in range(300) if compile_sql(sql).matches(message_properties(n))]
             for name, sql in (("EuBig", EU_BIG), ("Five", FIVE))}
    # the selectors take some and leave some: "lost" held for the ones taken, "filter" (no
    # delivery of another) for the rest, and their offsets were committed past them ("commit")
    assert 0 < len(taken["EuBig"]) < 300 and 0 < len(taken["Five"]) < 300
    assert result.per_group["EuBig"]["dead_lettered"] == sum(1 for n in taken["EuBig"] if n % 100 == 0)


def test_the_checker_catches_a_delivery_the_selector_does_not_take():
    scenario = small(messages=2, groups=(GroupSpec(name="EuBig", sql=EU_BIG),))
    checker = InvariantChecker(scenario, [1000], 0)
    number = next(n for n in range(100) if not compile_sql(EU_BIG).matches(message_properties(n)))
    for n in range(number + 1):
        checker.accepted(n, f"U{n}", f"O{n}", None, 0, ("SimTopic", 0, n, "broker-a"))

    class Delivered:
        properties = {"UNIQ_KEY": f"U{number}"}
        reconsume_times = 0
        msg_id = f"U{number}"
        store_host, commit_log_offset = None, number

    checker.delivered(scenario.groups[0], number, Delivered(), "SimTopic", 10)
    [violation] = [v for v in checker.violations if v.invariant == "filter"]
    assert f"message #{number}" in violation.message and EU_BIG in violation.message


@pytest.mark.parametrize("group, complaint", [
    (GroupSpec(sql="amount >"), "group SimGroup: sql: Invalid MessageSelector. expected a property"),
    (GroupSpec(sql=5), "sql is a SQL92 selector string"),
])
def test_a_bad_selector_is_a_scenario_error_with_one_line(group, complaint):
    with pytest.raises(ScenarioError, match=complaint):
        small(groups=(group,))


def test_a_pulsar_group_has_no_sql():
    with pytest.raises(ScenarioError, match="for 4.x and 5.x groups; this group is Pulsar"):
        Scenario.from_dict({"topics": [{"queues": 1}], "groups": [{"protocol": "pulsar", "sql": "a = 1"}]})


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(scenarios(max_messages=60, sql=True))
def test_drawn_sql_groups_keep_every_invariant(tmp_path_factory, scenario):
    result = run_simulation(scenario, tmp_path_factory.mktemp("sim"))
    assert result.ok, ([g.sql for g in scenario.groups], [str(v) for v in result.violations])
