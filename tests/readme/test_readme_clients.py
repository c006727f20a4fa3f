"""Each client guide says how to get its client with a command that works from a fresh
clone, at the version the project pins (issue 47: the Pulsar guide never said how to get
`pulsar-client`, the 5.x guide only `pip install`, outside the checkout's venv)."""
from __future__ import annotations

import re
import tomllib

from tests.support.readme import README

PYPROJECT = README.parent / "pyproject.toml"


def pin(extra: str, package: str) -> str:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    [version] = [d.split("==")[1] for d in extras[extra] if d.startswith(package + "==")]
    return version


def section(title: str) -> str:
    return " ".join(README.read_text().split(f"## {title}", 1)[1].split("\n## ", 1)[0].split())


def test_the_pulsar_guide_says_how_to_install_pulsar_client_in_the_checkout():
    text = section("Guide: Pulsar clients")
    assert f"`.venv/bin/pip install pulsar-client=={pin('test', 'pulsar-client')}`" in text
    assert "`.venv/bin/python`" in text


def test_the_5x_guide_says_dev_serve_brings_rocketmq_python_client():
    text = section("Guide: RocketMQ 5.x clients (gRPC)")
    version = pin("grpc", "rocketmq-python-client")
    assert "`./dev serve` installs the `grpc` extra" in text and f"(`rocketmq-python-client` {version})" in text
    assert "`.venv/bin/python`" in text


def test_the_analytics_guide_and_the_two_commands_say_the_checkouts_install_line():
    line = ".venv/bin/pip install -e '.[analytics]'"
    assert line in section("Guide: analytics over the commit log (Spark)")
    assert line in section("Two commands") and "does not install the `analytics` extra" in section("Two commands")
    assert not re.search(r"^# pip install", README.read_text(), re.M)     # no bare pip in an example's head
