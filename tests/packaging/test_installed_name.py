"""A real, non-editable install beside a user project that has its own ``store`` and
``broker`` packages (common names): ours live under ``rocketmq_emulator``, so the
project's imports and our pytest plugin both work. Builds the wheel and a fresh venv, as
a user's ``pip install rocketmq-emulator`` would (its dependencies come from the package
registry, or pip's cache)."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import textwrap
import venv

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(cmd, cwd=None, timeout=600):
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A venv with the built wheel of this checkout (not editable) and pytest."""
    work = tmp_path_factory.mktemp("install")
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--disable-pip-version-check",
         "-w", work / "dist", ROOT])
    wheel, = (work / "dist").glob("rocketmq_emulator-*.whl")
    venv.EnvBuilder(with_pip=True).create(work / "venv")
    python = work / "venv" / "bin" / "python"
    run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel, "pytest"])
    return python


def user_project(root: pathlib.Path) -> pathlib.Path:
    (root / "store").mkdir(parents=True)
    (root / "store" / "__init__.py").write_text("def save(order):\n    return f'saved {order}'\n")
    (root / "broker").mkdir()
    (root / "broker" / "__init__.py").write_text("NAME = 'the user project broker'\n")
    (root / "tests").mkdir()
    readme = (ROOT / "README.md").read_text()
    # the pytest guide's example: it needs nothing but the base install
    example = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S)
                   if "def test_a_poison_message_ends_in_the_dlq" in b)
    (root / "tests" / "test_readme.py").write_text(example)
    (root / "tests" / "test_own_packages.py").write_text(textwrap.dedent("""\
        import broker
        import store

        from rocketmq_emulator.client_sdk import EmbeddedBroker


        def test_the_projects_own_packages_are_its_own(rocketmq_broker):
            assert store.save("o-1") == "saved o-1"
            assert broker.NAME == "the user project broker"
            assert isinstance(rocketmq_broker, EmbeddedBroker)
        """))
    return root


def test_a_user_project_with_its_own_store_and_broker_packages(installed, tmp_path):
    project = user_project(tmp_path / "project")
    done = run([installed, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project)
    assert re.search(r"^2 passed", done.stdout, re.M), done.stdout


def test_the_wheel_holds_one_top_level_name(installed):
    site = run([installed, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    ours = {p.name for p in pathlib.Path(site).iterdir()} & {"broker", "store", "delay_scheduler", "client_sdk",
                                                             "spark_analytics"}
    assert not ours
    cli = run([installed.parent / "rocketmq-emulator", "--help"])
    assert "serve" in cli.stdout


def test_the_installed_cli_finds_the_commands_of_the_packages_above_the_broker(installed, tmp_path):
    """simulate / snapshot / analyze are registered entry points (broker/cli/main.py names no
    package above it): the wheel must carry them."""
    cli = installed.parent / "rocketmq-emulator"
    done = run([cli, "simulate", "--messages", "5", "--out", str(tmp_path / "sim"), "--quiet", "--json"])
    assert '"accepted": 5' in done.stdout
    assert "--data-dir" in run([cli, "snapshot", "--help"]).stdout


def test_the_wheel_carries_the_dashboard_page(installed):
    """The page is a file beside its module (package data): the wheel must carry it."""
    done = run([installed, "-c", "from rocketmq_emulator.broker.fronts.http.dashboard_page import PAGE; "
                                 "print(len(PAGE), '<title>rocketmq-emulator</title>' in PAGE)"])
    size, has_title = done.stdout.split()
    assert int(size) > 10_000 and has_title == "True"


def test_an_installed_package_without_an_extra_is_told_the_packages_extra(installed, tmp_path):
    """Not a checkout (no pyproject.toml and ./dev beside the package): the hint is the
    published package's extra (a checkout is told its own command: tests/cli/test_install_hints.py)."""
    done = subprocess.run([str(installed.parent / "rocketmq-emulator"), "analyze", str(tmp_path), "--out",
                           str(tmp_path / "report")], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("rocketmq-emulator analyze: error: needs the analytics extra, which is not installed")
    assert line.endswith(": pip install 'rocketmq-emulator[analytics]'"), line
