"""The dependency direction of DESIGN.md, enforced: store and delay_scheduler import
nothing of the project; broker imports both; spark_analytics only the store's format;
asyncio/sockets/grpc/MQTT only in adapters, the CLI and client transports; the sans-I/O
core never reads the wall clock, sleeps, starts threads or draws unseeded randomness
(that last rule on the syntax tree: test_contract.py)."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROJECT = {"broker", "store", "delay_scheduler", "client_sdk", "spark_analytics"}


def modules(pkg):
    return sorted(p for p in (ROOT / pkg).rglob("*.py"))


PREFIX = "rocketmq_emulator."


def raw_imports_of(path):
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def imports_of(path):
    """Imported module names, with the installed prefix taken off (``rocketmq_emulator.store.x``
    reads as ``store.x``), so the rules below speak of the repository's folders."""
    return {n[len(PREFIX):] if n.startswith(PREFIX) else n for n in raw_imports_of(path)}


def top(name):
    return name.split(".")[0]


@pytest.mark.parametrize("pkg", ["store", "delay_scheduler"])
def test_foundations_import_nothing_of_the_project(pkg):
    for path in modules(pkg):
        bad = {n for n in imports_of(path) if top(n) in PROJECT - {pkg}}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_broker_imports_only_store_and_delay_scheduler():
    for path in modules("broker"):
        bad = {n for n in imports_of(path) if top(n) in PROJECT - {"broker", "store", "delay_scheduler"}}
        # (the CLI finds simulate / snapshot / analyze as registered entry points)
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


# What client_sdk may use of the broker, each with its reason: the codecs (one codec, two
# ends), the core's door (BrokerCore and its facade) and the typed values it takes and
# gives; nothing of a front's request handling, no service, no read model, no
# operation's module. (The fronts' and the CLI's list: test_one_door.py.)
CLIENT_SDK_MAY_IMPORT = {
    # codecs
    "broker.fronts.remoting.protocol": "the 4.x remoting codec, and the 4.x codes of the typed operations' outcomes",
    "broker.fronts.pulsar.frames": "the Pulsar frame codec",
    "broker.fronts.pulsar.schema": "the Pulsar command schema (PulsarApi.proto's field numbers)",
    "broker.fronts.pulsar.entry_keys": "the Pulsar entry codec's key reader a broker's compaction is built with "
                                        "(None without the pulsar extra)",
    "broker.pulsar_model.names": "the codec of names: how a Pulsar topic is named in the store",
    # the door
    "broker.core": "the in-process broker (EmbeddedBroker, the in-process transports)",
    "broker.facade.across": "the door over several brokers: dead letters and their re-drive (EmbeddedBroker; "
                            "RemoteBroker reads the same typed values off the wire), fault rules placed on a "
                            "cluster as one (EmbeddedBroker.faults, a scenario's rules), what the stores hold "
                            "(the simulator's accounting)",
    "broker.cluster": "a cluster of brokers in process (EmbeddedBroker(brokers=N))",
    # typed values
    "broker.operations": "typed requests and results",
    "broker.notifications": "the core's typed notifications (the in-process hub takes held pulls' answers)",
    "broker.config": "BrokerConfig for an embedded broker",
    "broker.events": "the retry lifecycle's event kinds (the simulator's accounting)",
    "broker.rocketmq_model.topics": "topic names and their checks (a scenario's topics are checked as the broker does)",
    "broker.rocketmq_model.sql_filter": "the one SQL92 evaluator: the simulator knows which messages a SQL group takes",
    "broker.retry_lifecycle": "the one retry decision: the SDK's client-side rules ask it",
    "broker.pulsar_model.cursors": "SubType and a subscription's outcomes (the simulator's Pulsar consumer)",
    "broker.faults.door": "a fault rule's typed outcome (the in-process transport translates it, as a front does)",
    "broker.rocketmq_model.long_polling": "HeldPull, the typed value the door's held_pulls_until gives the idle "
                                           "skipper (it reads one, and sends its pull again through pull_or_hold)",
    "broker.faults.rules": "fault rules on a broker in process (EmbeddedBroker.faults, issue 38): the rule's "
                           "typed values (a rule, its operation and action, FaultError), placed through the door",
    # the in-process ends of listeners: what a TCP connection would reach (fronts, not the core)
    "broker.fronts.remoting.front": "the in-process hub hands 4.x commands to the 4.x front, as the TCP listener does",
    "broker.fronts.pulsar.front": "the in-process Pulsar client talks to the Pulsar front, as over TCP",
    "broker.fronts.grpc5.listener": "the rocketmq5_endpoint fixture starts the gRPC listener beside the test "
                                    "(imported by name: pytest_plugin._listener)",
    "broker.fronts.pulsar.listener": "the pulsar_endpoint fixture starts the Pulsar listener beside the test "
                                     "(imported by name: pytest_plugin._listener)",
    "broker.fronts.grpc5.stubs": "the pytest plugin checks that the grpc extra is installed (imported by name)",
    # the command line
    "broker.cli.common": "the simulate command's errors and help, as every command's",
}
_IMPORTED_BY_NAME = {"broker.fronts.grpc5.listener", "broker.fronts.pulsar.listener", "broker.fronts.grpc5.stubs"}


def sdk_import_violations(imported: dict[str, set[str]]) -> list[str]:
    """``imported``: each SDK file's imported module names."""
    out = []
    for rel, names in sorted(imported.items()):
        for n in sorted(names):
            if top(n) == "spark_analytics":
                out.append(f"{rel} imports {n}: client_sdk sits below the analytics")
            elif top(n) == "broker" and not any(n == m or n.startswith(m + ".") for m in CLIENT_SDK_MAY_IMPORT):
                out.append(f"{rel} imports {n}, not part of the core's API for clients")
    return out


def sdk_imports():
    return {path.relative_to(ROOT).as_posix(): imports_of(path) for path in modules("client_sdk")}


def test_client_sdk_imports_the_core_api_codecs_and_foundations_only():
    assert sdk_import_violations(sdk_imports()) == []


def unused_sdk_entries(imported: dict[str, set[str]], allowed) -> list[str]:
    names = {n for found in imported.values() for n in found}
    return [m for m in allowed if m not in _IMPORTED_BY_NAME and
            not any(n == m or n.startswith(m + ".") for n in names)]


def test_every_entry_of_the_sdk_list_is_used():
    """An entry nothing imports any more is taken off (the list only shrinks to what the
    SDK needs); a planted stale entry is seen."""
    imported = sdk_imports()
    assert unused_sdk_entries(imported, CLIENT_SDK_MAY_IMPORT) == []
    assert unused_sdk_entries(imported, {**CLIENT_SDK_MAY_IMPORT, "broker.rocketmq_model.dead_letters": "stale"}) == \
        ["broker.rocketmq_model.dead_letters"]


def test_the_sdk_import_rule_sees_a_planted_import():
    imported = sdk_imports()
    imported["client_sdk/producer.py"] = imported["client_sdk/producer.py"] | {"broker.rocketmq_model.sending",
                                                                              "broker.fronts.remoting.processors.send"}
    assert sdk_import_violations(imported) == [
        "client_sdk/producer.py imports broker.fronts.remoting.processors.send, not part of the core's API for clients",
        "client_sdk/producer.py imports broker.rocketmq_model.sending, not part of the core's API for clients"]


def test_spark_analytics_imports_only_the_store_format():
    for path in modules("spark_analytics"):
        for n in imports_of(path):
            if top(n) in PROJECT - {"spark_analytics"}:
                # record_view reads fields out of raw records: format too, no store state;
                # accounting is the store's one definition of what a run produced; the
                # snapshot (with its manifest, directory layout and plain walk) is its format
                assert n in ("store.records", "store.record_view", "store.accounting", "store.snapshot",
                             "store.store_dir", "store.segment_walk", "store.errors", "store"), \
                    f"{path.relative_to(ROOT)} imports {n}"


IO_MODULES = {"asyncio", "socket", "grpc", "aiomqtt", "paho", "selectors", "ssl"}


def test_io_only_in_fronts_adapters_cli_and_client_transports():
    for pkg in ("broker", "store", "delay_scheduler"):
        for path in modules(pkg):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(("broker/adapters/", "broker/fronts/")) or rel in ("broker/cli/serve.py",
                                                                                 "broker/cli/remote.py",
                                                                                 "broker/cli/probe.py"):
                continue
            bad = {n for n in imports_of(path) if top(n) in IO_MODULES}
            assert not bad, f"{rel} imports {bad}"


def every_python_file():
    for pkg in sorted(PROJECT) + ["tests", "benchmarks"]:
        yield from modules(pkg)


def test_project_modules_are_imported_by_their_installed_name():
    """A bare ``import store`` would load a second copy of the package from the working
    directory (and, installed, a user's own ``store`` package): every import of ours goes
    through ``rocketmq_emulator``."""
    for path in every_python_file():
        bad = {n for n in raw_imports_of(path) if top(n) in PROJECT}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad} without the rocketmq_emulator prefix"


def test_every_package_folder_is_installed():
    """pyproject.toml lists the packages by hand (the folders are mapped under
    rocketmq_emulator); a new sub-package missing from the list would be absent from a
    real install."""
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {PREFIX + p.parent.relative_to(ROOT).as_posix().replace("/", ".")
               for pkg in PROJECT for p in (ROOT / pkg).rglob("__init__.py")}
    assert set(conf["packages"]) == folders
    assert conf["package-dir"] == {PREFIX + pkg: pkg for pkg in PROJECT}
