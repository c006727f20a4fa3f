"""`./dev`, run from a copy of the script in a throw-away "clone" whose .venv holds fake
`python` and `rocketmq-emulator` programs that log how they were called: what it would
install and run is checked without installing anything (and without ../shared)."""
from __future__ import annotations

import ast
import os
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FAKE = '#!/bin/sh\necho "$(basename "$0") $*" >> "{log}"\n'


@pytest.fixture
def clone(tmp_path):
    """tmp/clone with dev, pyproject.toml, benchmarks/ and a fake .venv; no tmp/shared."""
    root = tmp_path / "clone"
    (root / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(REPO / "dev", root / "dev")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(REPO / "benchmarks", root / "benchmarks", ignore=shutil.ignore_patterns("__pycache__"))
    log = tmp_path / "calls.log"
    log.touch()
    fakebin = tmp_path / "fakebin"            # apt, dpkg, sudo and npm are logged, never run
    fakebin.mkdir()
    for name, folder in [("python", root / ".venv" / "bin"), ("rocketmq-emulator", root / ".venv" / "bin"),
                         *((n, fakebin) for n in ("apt-get", "dpkg", "sudo", "npm", "java"))]:
        path = folder / name
        path.write_text(FAKE.format(log=log))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return Clone(root, log, {**os.environ, "PATH": f"{fakebin}:{os.environ['PATH']}"})


@dataclass
class Clone:
    root: Path
    log: Path
    env: dict


def dev(clone, *args):
    return subprocess.run([str(clone.root / "dev"), *args], capture_output=True, text=True, timeout=60,
                          env=clone.env)


def calls(clone) -> list[str]:
    return clone.log.read_text().splitlines()


def test_help_prints_the_usage_and_exits_0(clone):
    done = dev(clone, "help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: ./dev COMMAND")
    for command in ("serve", "test", "bench NAME", "help"):
        assert f"./dev {command}" in done.stdout
    assert "set -" not in done.stdout and "#" not in done.stdout
    assert calls(clone) == []


@pytest.mark.parametrize("args", [["frobnicate"], []])
def test_an_unknown_or_missing_command_prints_the_usage_and_exits_2(clone, args):
    done = dev(clone, *args)
    assert done.returncode == 2
    assert "usage: ./dev COMMAND" in done.stderr and done.stdout == ""
    if args:
        assert done.stderr.splitlines()[0] == "./dev: error: unknown command 'frobnicate'"
    assert calls(clone) == []


def test_serve_installs_the_extras_the_readme_serve_examples_use(clone):
    done = dev(clone, "serve", "--mqtt", "mqtt://127.0.0.1:1883")
    assert done.returncode == 0, done.stderr
    log = calls(clone)
    assert any(re.search(r"-m pip install .*-e \.\[mqtt,grpc,pulsar,http\]$", line) for line in log), log
    assert log[-1] == "rocketmq-emulator serve --mqtt mqtt://127.0.0.1:1883"


def test_bench_without_the_peer_bench_says_what_is_missing_before_installing_anything(clone):
    done = dev(clone, "bench", "w1_retry")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("./dev: error: bench w1_retry needs the peer benchmarks in ../shared/peer-bench")
    others = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py"))
    peer_benches = re.search(r'^PEER_BENCHES="([^"]*)"', (REPO / "dev").read_text(), re.M).group(1).split()
    others = [b for b in others if b not in peer_benches]
    assert line.endswith("these run without them: " + " ".join(others))
    assert calls(clone) == []


@pytest.mark.parametrize("args, says", [
    (["bench", "nosuch"], "./dev: error: no benchmark 'nosuch'; choose one of: "),
    (["bench"], "./dev: error: bench needs a NAME; choose one of: "),
])
def test_bench_with_an_unknown_or_missing_name_is_one_line_and_exit_2(clone, args, says):
    done = dev(clone, *args)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line == says + ", ".join(sorted(p.stem for p in (REPO / "benchmarks").glob("*.py")))
    assert calls(clone) == []


def test_bench_with_the_peer_bench_present_goes_on_to_install_and_run(clone):
    (clone.root.parent / "shared" / "peer-bench").mkdir(parents=True)
    (clone.root.parent / "shared" / "peer-bench" / "common.py").write_text("")
    done = dev(clone, "bench", "w1_retry", "--n", "10")
    assert done.returncode == 0, done.stderr
    assert calls(clone)[-1].endswith("benchmarks/w1_retry.py --n 10")


def _imports(path: Path) -> set[str]:
    return _imports_of(path.read_text())


def _imports_of(source: str) -> set[str]:
    """Imports of a module, and of the scripts it carries as strings to run in a child
    Python (delivery_cost runs w1_retry that way)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "import " in node.value:
            try:
                names |= _imports_of(node.value)
            except SyntaxError:
                pass  # a string that is not a script
    return names


def test_dev_lists_exactly_the_benches_that_need_the_peer_bench():
    """A bench needs ../shared/peer-bench when it imports its `common`, or imports a
    bench that does."""
    benches = {p.stem: _imports(p) for p in (REPO / "benchmarks").glob("*.py")}
    needs = {name for name, imports in benches.items() if "common" in imports}
    while True:                         # (a bench that imports one that imports one that does, too)
        more = {name for name, imports in benches.items() if imports & needs} - needs
        if not more:
            break
        needs |= more
    listed = re.search(r'^PEER_BENCHES="([^"]*)"', (REPO / "dev").read_text(), re.M).group(1).split()
    assert sorted(listed) == sorted(needs)


NOISY_PIP = '''#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
case "$*" in
  *"pip install"*)
    echo "WARNING: Location 'file:///somewhere' is ignored" >&2
    echo "  BuildBackendWarning: Editable installation." >&2
    echo "  !! ******** Please be careful with folders in your working directory ******** !!" >&2
    exit "${{FAKE_PIP_RC:-0}}" ;;
esac
'''


def _noisy_pip(clone):
    python = clone.root / ".venv" / "bin" / "python"
    python.write_text(NOISY_PIP.format(log=clone.log))


def test_serve_installs_without_the_build_backends_banner(clone):
    _noisy_pip(clone)
    done = dev(clone, "serve", "--port", "0")
    assert done.returncode == 0, done.stderr
    assert "BuildBackendWarning" not in done.stderr + done.stdout and "!!" not in done.stderr
    assert "WARNING: Location" not in done.stderr
    assert "[dev] installing rocketmq-emulator[mqtt,grpc,pulsar,http] into .venv" in done.stderr


def test_a_failing_install_shows_pips_output_and_exits_1(clone):
    _noisy_pip(clone)
    done = dev(clone, "serve")
    assert done.returncode == 0
    (clone.root / ".venv" / ".installed-mqtt,grpc,pulsar,http").unlink()
    clone.env["FAKE_PIP_RC"] = "1"
    done = dev(clone, "serve")
    assert done.returncode == 1
    assert "BuildBackendWarning" in done.stderr                 # what pip said, for the user to read
    assert done.stderr.strip().splitlines()[-1].startswith("./dev: error: pip install failed")
    assert not calls(clone)[-1].startswith("rocketmq-emulator serve")


def test_help_names_the_extras_serve_installs():
    text = subprocess.run([str(REPO / "dev"), "help"], capture_output=True, text=True, timeout=30).stdout
    extras = re.search(r'serve\)\n(?:\s*#.*\n)*\s*ensure_python "([^"]+)"', (REPO / "dev").read_text()).group(1)
    assert f"rocketmq-emulator[{extras}]" in text, (extras, text)


def test_bench_lists_only_benchmarks(clone):
    done = dev(clone, "bench", "nosuch")
    listed = done.stderr.strip().split("choose one of: ")[1].split(", ")
    assert "grpc5_stub_server" not in listed and "grpc5_throughput" in listed
