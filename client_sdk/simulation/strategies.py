"""hypothesis strategies for simulation scenarios, for your own property tests:

    from hypothesis import given, settings
    from . import run_simulation
    from .strategies import scenarios

    @settings(max_examples=20, deadline=None)
    @given(scenarios(max_messages=100))
    def test_my_settings_never_lose_messages(tmp_path_factory, scenario):
        result = run_simulation(scenario, tmp_path_factory.mktemp("sim"))
        assert result.ok, result.violations

Needs hypothesis: the ``simulation`` extra (the ``test`` extra has it too; without it the
import error says the command that installs it). Scenarios are kept small by default so
that a run takes a fraction of a second; every one is valid (``Scenario`` accepts it).
"""
from __future__ import annotations

try:
    from hypothesis import strategies as st
except ImportError as exc:      # the one line says which extra brings it
    from rocketmq_emulator.broker.cli.common import extra_not_installed

    raise ImportError(f"client_sdk.simulation.strategies needs hypothesis: {extra_not_installed('simulation', exc)}") \
        from None

from .fault_rules import FaultSpec
from .scenario import ConsumerRestart, GroupSpec, ProducerSpec, Scenario, TopicSpec, WriteOffWindow

__all__ = ["scenarios", "group_specs", "fault_timelines", "fault_rules", "sql_selectors"]

MINUTE = 60_000


def _sql_conditions():
    """One condition over the properties a run's messages carry (scenario.message_properties:
    region eu/us/asia, amount 0..1023 or missing)."""
    regions = st.sampled_from(["eu", "us", "asia", "mars"])
    amounts = st.integers(0, 1023)
    return st.one_of(
        regions.map(lambda r: f"region = '{r}'"),
        regions.map(lambda r: f"region <> '{r}'"),
        st.lists(regions, min_size=1, max_size=3, unique=True).map(
            lambda rs: "region IN (" + ", ".join(f"'{r}'" for r in rs) + ")"),
        st.tuples(st.sampled_from(["<", "<=", ">", ">=", "="]), amounts).map(lambda t: f"amount {t[0]} {t[1]}"),
        st.tuples(amounts, amounts).map(lambda t: f"amount BETWEEN {min(t)} AND {max(t)}"),
        st.sampled_from(["amount IS NULL", "amount IS NOT NULL"]))


def sql_selectors():
    """A SQL92 selector over the run's message properties: conditions joined by AND / OR,
    some negated (what GroupSpec.sql takes)."""
    condition = _sql_conditions()
    return st.recursive(condition, lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
        inner.map(lambda c: f"NOT ({c})")), max_leaves=4)


@st.composite
def group_specs(draw, name: str = "SimGroup", topic: str = "SimTopic", allow_orderly: bool = True,
                sql: bool = False) -> GroupSpec:
    orderly = allow_orderly and draw(st.booleans())
    protocol = "4.x" if orderly else draw(st.sampled_from(["4.x", "5.x"]))
    poison = draw(st.sampled_from([0, 10, 50, 100]))
    invisible = draw(st.sampled_from([10, 60, 300]))        # drawn for every group: the draws stay as they were
    return GroupSpec(
        name=name, topic=topic, orderly=orderly, protocol=protocol,
        invisible_seconds=invisible if protocol == "5.x" else GroupSpec.invisible_seconds,
        consumers=draw(st.integers(1, 2)),
        batch_size=draw(st.integers(1, 4)),
        max_reconsume_times=draw(st.integers(0, 3)) if orderly else draw(st.sampled_from([-1, 0, 1, 2, 5])),
        poison_every=poison,
        fail_once_every=draw(st.sampled_from([0, 10])),
        fail_once_remainder=5,
        fail_probability=draw(st.sampled_from([0.0, 0.05, 0.2])),
        slow_probability=0.0 if orderly else draw(st.sampled_from([0.0, 0.0, 0.02])),
        # (drawn only when asked: the draws without it stay as they were)
        sql=draw(st.one_of(st.just(""), sql_selectors())) if sql else "")


@st.composite
def fault_timelines(draw, duration_ms: int, groups: tuple[str, ...]) -> dict:
    """crashes, write-off windows and consumer restarts inside ``duration_ms``."""
    times = st.integers(0, duration_ms)
    crashes = tuple(sorted(draw(st.lists(times, max_size=2))))
    windows = []
    for start in draw(st.lists(times, max_size=2)):
        windows.append(WriteOffWindow(start, start + draw(st.integers(1, 2 * MINUTE))))
    restarts = tuple(ConsumerRestart(draw(st.sampled_from(groups)), draw(times), draw(st.integers(0, MINUTE)))
                     for _ in range(draw(st.integers(0, 1))))
    return {"crashes_ms": crashes, "write_off": tuple(windows), "consumer_restarts": restarts}


# what each operation may do (broker/faults/rules.py), and the delays drawn for "delay"
_ACTIONS = {"send": ("refuse", "drop", "delay"), "pull": ("refuse", "drop", "delay", "duplicate", "hold"),
            "send_back": ("refuse", "drop", "delay"), "ack": ("refuse", "drop", "delay"),
            "heartbeat": ("refuse", "drop", "delay"), "route": ("refuse", "drop", "delay")}


@st.composite
def fault_rules(draw, duration_ms: int, groups: tuple[str, ...] = (), max_rules: int = 3,
                five_groups: tuple[str, ...] = ()) -> tuple[FaultSpec, ...]:
    """Fault rules of a scenario (fault_rules.py): operation x action, maybe for one of
    ``groups`` (4.x groups) or, for a pull or an ack, of ``five_groups`` (5.x groups, whose
    simulated consumer meets only those), with a probability, a count and a window inside
    ``duration_ms`` drawn or left out."""
    rules = []
    for _ in range(draw(st.integers(0, max_rules))):
        operation = draw(st.sampled_from(sorted(_ACTIONS)))
        action = draw(st.sampled_from(_ACTIONS[operation]))
        window = None
        if draw(st.booleans()):
            start = draw(st.integers(0, duration_ms))
            window = (start, start + draw(st.integers(1, 5 * MINUTE)))
        rules.append(FaultSpec(
            operation, action,
            group=draw(st.sampled_from((None,) + groups + (five_groups if operation in ("pull", "ack") else ())))
            if (groups or five_groups) and operation != "send" else None,
            times=draw(st.one_of(st.none(), st.integers(1, 20))),
            probability=draw(st.one_of(st.none(), st.sampled_from([0.05, 0.2, 0.5, 1.0]))),
            window_ms=window, delay_ms=draw(st.sampled_from([500, 5_000, 40_000])) if action == "delay" else 0,
            stored=operation == "send" and action == "drop" and draw(st.booleans())))
    return tuple(rules)


@st.composite
def scenarios(draw, max_messages: int = 200, max_groups: int = 2, faults: bool = True,
              rules: bool = False, sql: bool = False) -> Scenario:
    """A valid scenario; ``faults``: crashes, write-off windows and consumer restarts;
    ``rules``: fault rules on the broker too (``fault_rules``); ``sql``: groups may select
    by a SQL92 selector over the messages' properties (``sql_selectors``). Each is drawn
    only when asked, so the draws without it stay as they were."""
    duration = draw(st.integers(1, 30)) * MINUTE
    queues = draw(st.integers(1, 4))
    n_groups = draw(st.integers(1, max_groups))
    groups = tuple(draw(group_specs(name=f"SimGroup{i}", sql=sql)) for i in range(n_groups))
    extra = draw(fault_timelines(duration, tuple(g.name for g in groups))) if faults else {}
    if any(g.protocol == "5.x" for g in groups):
        extra["settle_ms"] = 8 * 60 * MINUTE     # a 5.x poison message ends 6 h 46 min after it began
    if rules:
        extra["faults"] = draw(fault_rules(duration, tuple(g.name for g in groups if g.protocol == "4.x"),
                                           five_groups=tuple(g.name for g in groups if g.protocol == "5.x")))
    return Scenario(
        seed=draw(st.integers(0, 2 ** 31 - 1)), messages=draw(st.integers(0, max_messages)),
        duration_ms=duration, topics=(TopicSpec(queues=queues),),
        producers=(ProducerSpec(rate=draw(st.sampled_from([10.0, 100.0, 1000.0])),
                                body_size=draw(st.integers(9, 512))),),
        groups=groups, **extra)
