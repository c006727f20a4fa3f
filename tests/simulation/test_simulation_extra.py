"""`client_sdk.simulation.strategies` needs hypothesis: the `simulation` extra installs
it, and without it the import fails with one line that names the extra."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from rocketmq_emulator.broker.cli.common import install_command

REPO = Path(__file__).resolve().parents[2]


def test_the_simulation_extra_installs_the_hypothesis_the_tests_use():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    hypothesis = [d for d in extras["test"] if d.startswith("hypothesis")]
    assert hypothesis and extras["simulation"] == hypothesis


def test_without_hypothesis_the_import_error_names_the_extra():
    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "try:\n"
            "    import rocketmq_emulator.client_sdk.simulation.strategies\n"
            "except ImportError as exc:\n"
            "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.strip().splitlines()
    assert line.endswith(install_command("simulation")) and "hypothesis" in line, line
    import rocketmq_emulator.client_sdk.simulation as simulation     # the rest of the package needs no hypothesis
    assert simulation.run_simulation
