"""Deterministic simulation runs: a scenario, one seed, the real broker and SDK on a
virtual clock, faults on a timeline, invariants checked as it goes.

    from . import Scenario, GroupSpec, run_simulation
    result = run_simulation(Scenario(seed=7, messages=500, groups=(GroupSpec(poison_every=50),)), "/tmp/sim")
    assert result.ok, result.violations

Fault rules on the broker: ``Scenario(..., faults=(fault_spec("send", "drop", stored=True,
probability=0.1), fault_spec("pull", "delay", delay="5s", window=("1m", "5m"))))`` (the
fields of EmbeddedBroker.faults.add; fault_rules.py says where they act).

``client_sdk.simulation.strategies`` has hypothesis strategies for scenarios.
"""
from .fault_rules import FaultSpec, fault_spec
from .invariants import InvariantChecker, Violation
from .scenario import (BrokerWindow, ConsumerRestart, GroupSpec, ProducerSpec, Scenario, ScenarioError, TopicSpec,
                       WriteOffWindow, w1_scenario)
from .simulator import START_MS, Simulation, SimulationResult, run_simulation

__all__ = ["Scenario", "GroupSpec", "ProducerSpec", "TopicSpec", "WriteOffWindow", "ConsumerRestart", "BrokerWindow",
           "ScenarioError", "w1_scenario", "Simulation", "SimulationResult", "run_simulation", "Violation",
           "InvariantChecker", "START_MS", "FaultSpec", "fault_spec"]
