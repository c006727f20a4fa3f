"""A missing extra is said with the command that installs it from where the user is
(issue 47: `analyze` in a checkout said `pip install 'rocketmq-emulator[analytics]'`,
which installs the published package, not the checkout). One helper,
``install_command``, makes the command for every message: in a source checkout (the
package runs from a folder with pyproject.toml and ./dev) pip's editable install of the
checkout into the Python running now; from an installed package, the package's extra
(tests/packaging checks that form in a real wheel install)."""
from __future__ import annotations

import pathlib
import sys

import pytest

from rocketmq_emulator.broker.cli.common import install_command

from ..support.cli_run import CLI_MAIN

ROOT = pathlib.Path(__file__).resolve().parents[2]


def checkout(tmp_path) -> pathlib.Path:
    root = tmp_path / "clone"
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'rocketmq-emulator'\n")
    (root / "dev").write_text("#!/usr/bin/env bash\n")
    return root


def test_in_a_checkout_with_its_venv_the_hint_is_the_venvs_pip_on_the_checkout(tmp_path):
    root = checkout(tmp_path)
    assert install_command("analytics", package_root=root, prefix=root / ".venv", cwd=root) == \
        ".venv/bin/pip install -e '.[analytics]'"
    elsewhere = tmp_path / "somewhere"
    assert install_command("grpc", package_root=root, prefix=root / ".venv", cwd=elsewhere) == \
        f"cd {root} && .venv/bin/pip install -e '.[grpc]'"


def test_in_a_checkout_run_by_another_python_the_hint_is_that_pythons_pip(tmp_path):
    root = checkout(tmp_path)
    other = tmp_path / "other-venv"
    assert install_command("http", package_root=root, prefix=other, cwd=root, executable=str(other / "bin/python")) \
        == f"{other}/bin/python -m pip install -e '{root}[http]'"


def test_an_installed_package_is_told_the_packages_extra(tmp_path):
    site = tmp_path / "site-packages" / "rocketmq_emulator"       # no pyproject.toml, no ./dev beside it
    site.mkdir(parents=True)
    assert install_command("analytics", package_root=site, prefix=tmp_path / "venv", cwd=tmp_path) == \
        "pip install 'rocketmq-emulator[analytics]'"


# Each "missing extra" message the user can meet, made to happen in a child process that
# runs in the checkout (modules set to None cannot be imported, as when the extra is absent).
MESSAGES = {
    "analytics": ("numpy pyarrow pyspark matplotlib", CLI_MAIN, ["analyze", "SNAP", "--out", "OUT"]),
    "grpc": ("grpc", CLI_MAIN, ["serve", "--port", "0", "--grpc-port", "0", "--in-memory"]),
    "pulsar": ("google_crc32c", CLI_MAIN, ["serve", "--port", "0", "--pulsar-port", "0", "--in-memory"]),
    "http": ("aiohttp", CLI_MAIN, ["serve", "--port", "0", "--http-port", "0", "--in-memory"]),
    "mqtt": ("aiomqtt", CLI_MAIN, ["serve", "--port", "0", "--in-memory", "--mqtt", "mqtt://127.0.0.1:1883"]),
    "simulation": ("hypothesis", "import rocketmq_emulator.client_sdk.simulation.strategies\n", []),
}


@pytest.mark.parametrize("extra", sorted(MESSAGES))
def test_every_missing_extra_message_says_the_command_that_works_here(extra, tmp_path):
    import subprocess

    blocked, code, args = MESSAGES[extra]
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in blocked.split())
    args = [str(tmp_path / a) if a in ("SNAP", "OUT") else a for a in args]
    done = subprocess.run([sys.executable, "-c", prelude + code, *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    said = done.stderr.strip().splitlines()[-1]
    assert f"needs the {extra} extra" in said or f"needs {blocked.split()[0]}" in said, said
    if pathlib.Path(sys.prefix) == ROOT / ".venv":          # the tests run in ./dev's venv
        assert said.endswith(f".venv/bin/pip install -e '.[{extra}]'"), said
    assert said.endswith(install_command(extra)), said
    assert "pip install 'rocketmq-emulator[" not in said, said


def test_a_retry_letter_simulation_without_the_pulsar_extra_says_the_command_that_works_here(tmp_path):
    import subprocess

    prelude = "import sys\nsys.modules['google_crc32c'] = None\n"
    done = subprocess.run([sys.executable, "-c", prelude + CLI_MAIN, "simulate", "--protocol", "pulsar",
                           "--retry-letters", "increasing", "--messages", "10", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    said = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and "pulsar extra" in said and said.endswith(install_command("pulsar")), said
