"""Deterministic simulation runs: a scenario, one seed, the real broker and SDK on a
virtual clock, faults on a timeline, invariants checked as it goes.

    from . import Scenario, GroupSpec, run_simulation
    result = run_simulation(Scenario(seed=7, messages=500, groups=(GroupSpec(poison_every=50),)), "/tmp/sim")
    assert result.ok, result.violations

``client_sdk.simulation.strategies`` has hypothesis strategies for scenarios.
"""
from .invariants import InvariantChecker, Violation
from .scenario import (BrokerWindow, ConsumerRestart, GroupSpec, ProducerSpec, Scenario, ScenarioError, TopicSpec,
                       WriteOffWindow, w1_scenario)
from .simulator import START_MS, Simulation, SimulationResult, run_simulation

__all__ = ["Scenario", "GroupSpec", "ProducerSpec", "TopicSpec", "WriteOffWindow", "ConsumerRestart", "BrokerWindow",
           "ScenarioError", "w1_scenario", "Simulation", "SimulationResult", "run_simulation", "Violation",
           "InvariantChecker", "START_MS"]
