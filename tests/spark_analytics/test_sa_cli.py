"""`snapshot` and `analyze` as a user meets them: on an install without the analytics
extra, and with the simple mistakes (a bad master URL, an unreachable master, no Java,
--out naming a file) refused in one line with exit code 2 before Spark starts."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from rocketmq_emulator.broker.cli.common import install_command
from rocketmq_emulator.spark_analytics import cli, report
from rocketmq_emulator.spark_analytics.cli import analyze_main
from rocketmq_emulator.store.records import MessageRecord, encode_record

# The child process: the modules of the analytics extra cannot be imported, as on a
# plain `pip install rocketmq-emulator`; then the real command line.
_WITHOUT_EXTRA = """
import sys
for name in ("numpy", "pyarrow", "pyspark", "matplotlib"):
    sys.modules[name] = None
from rocketmq_emulator.broker.cli.main import main
sys.exit(main(sys.argv[1:]))
"""
_CLI = "import sys\nfrom rocketmq_emulator.broker.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"


def run(code: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, env=env)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got:\n{stderr}"
    assert lines[0].startswith("rocketmq-emulator analyze: error: "), lines[0]
    return lines[0]


def make_store(root, n: int = 20):
    (root / "commitlog").mkdir(parents=True)
    (root / "config").mkdir()
    buf = bytearray()
    for i in range(n):
        buf += encode_record(MessageRecord(topic="T", body=b"m%d" % i, queue_id=0, queue_offset=i,
                                           properties={"UNIQ_KEY": f"U{i}"}, commit_log_offset=len(buf),
                                           store_timestamp=1000 + i))
    (root / "commitlog" / f"{0:020d}").write_bytes(bytes(buf))
    (root / "config" / "consumerOffset.json").write_text(json.dumps({"offsetTable": {"T@g": {"0": 5}}}))
    return root


@pytest.fixture()
def store(tmp_path):
    return make_store(tmp_path / "store")


@pytest.fixture()
def no_spark(monkeypatch):
    """Fails the test if the analysis (and so Spark) would start."""
    def refuse(*args, **kwargs):
        raise AssertionError("analyze started Spark for input it should have refused")
    monkeypatch.setattr(report, "analyze_snapshot", refuse)


def test_snapshot_needs_nothing_beyond_the_base_install(store, tmp_path):
    r = run(_WITHOUT_EXTRA, "snapshot", "--data-dir", str(store), "--out", str(tmp_path / "snap"), "--json")
    assert r.returncode == 0, r.stderr
    manifest = json.loads(r.stdout)
    assert manifest["commitlog"]["records"] == 20 and manifest["damage"] is None
    assert (tmp_path / "snap" / "manifest.json").exists() and r.stderr == ""


def test_analyze_without_the_extra_says_which_extra_in_one_line(store, tmp_path):
    r = run(_WITHOUT_EXTRA, "analyze", str(store), "--out", str(tmp_path / "report"))
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert line.startswith("rocketmq-emulator analyze: error: needs the analytics extra, which is not installed (")
    assert line.endswith(install_command("analytics")), line       # from a checkout: the checkout's command
    assert not (tmp_path / "report").exists()


def test_importing_the_cli_imports_nothing_heavy():
    code = ("import sys\nfrom rocketmq_emulator.spark_analytics import cli\n"
            "print(sorted(m for m in ('numpy', 'pyarrow', 'pyspark', 'matplotlib') if m in sys.modules))")
    assert run(code).stdout.strip() == "[]"


def test_a_master_url_spark_would_refuse_is_refused_first(store, tmp_path, capsys, no_spark):
    for bad in ("nonsense", "local[x]", "spark://no-port", "spark:/127.0.0.1:7077"):
        assert analyze_main([str(store), "--out", str(tmp_path / "o"), "--master", bad]) == 2
        line = one_line(capsys.readouterr().err)
        assert repr(bad) in line and "spark://HOST:PORT" in line and "local[*]" in line


def test_an_unreachable_standalone_master_is_one_line_without_starting_spark(store, tmp_path, capsys, no_spark):
    with socket.socket() as s:                    # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert analyze_main([str(store), "--out", str(tmp_path / "o"), "--master", f"spark://127.0.0.1:{port}"]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"cannot reach the Spark master spark://127.0.0.1:{port}" in line and "refused" in line
    assert not (tmp_path / "o").exists()


def test_out_naming_a_file_is_refused_before_spark_starts(store, tmp_path, capsys, no_spark):
    (tmp_path / "file").write_text("keep me")
    for out in (tmp_path / "file", tmp_path / "file" / "sub"):
        assert analyze_main([str(store), "--out", str(out)]) == 2
        assert "is a file" in one_line(capsys.readouterr().err)
    assert (tmp_path / "file").read_text() == "keep me"


def test_no_java_says_so_and_how_to_install_it(store, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    (tmp_path / "bin").mkdir()
    env["PATH"] = str(tmp_path / "bin")           # no java on it
    r = run(_CLI, "analyze", str(store), "--out", str(tmp_path / "o"), env=env)
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "Spark needs Java and none was found" in line and "apt-get install default-jre-headless" in line


def test_a_java_home_without_java_is_named(store, tmp_path, capsys, monkeypatch, no_spark):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert analyze_main([str(store), "--out", str(tmp_path / "o")]) == 2
    assert f"JAVA_HOME={tmp_path} has no bin/java" in one_line(capsys.readouterr().err)


def test_usage_errors_use_the_common_prefix(capsys):
    assert analyze_main([]) == 2
    assert one_line(capsys.readouterr().err).endswith("the following arguments are required: snapshot, --out")
    assert cli.snapshot_main(["--data-dir", "x"]) == 2
    assert capsys.readouterr().err.startswith("rocketmq-emulator snapshot: error: ")


def test_a_snapshot_of_a_newer_format_is_one_line_without_starting_spark(store, tmp_path, capsys, no_spark):
    snap = tmp_path / "snap"
    assert cli.snapshot_main(["--data-dir", str(store), "--out", str(snap)]) == 0
    manifest = json.loads((snap / "manifest.json").read_text())
    manifest["format_version"] += 1
    (snap / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert analyze_main([str(snap), "--out", str(tmp_path / "o")]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"format version {manifest['format_version']}" in line and "reads up to 1" in line


def test_a_snapshot_with_a_segment_cut_short_is_refused_not_read_in_part(store, tmp_path, capsys, no_spark):
    """A segment shorter than the manifest says (a partial copy): refused in one line,
    not analysed up to the cut as if the snapshot ended there."""
    snap = tmp_path / "snap"
    assert cli.snapshot_main(["--data-dir", str(store), "--out", str(snap)]) == 0
    segment = snap / "commitlog" / f"{0:020d}"
    full = segment.stat().st_size
    with open(segment, "r+b") as f:
        f.truncate(full - 10)
    capsys.readouterr()
    assert analyze_main([str(snap), "--out", str(tmp_path / "o")]) == 2
    line = one_line(capsys.readouterr().err)
    assert "is incomplete" in line and f"{full - 10:,} bytes, its manifest says {full:,}" in line
    assert not (tmp_path / "o").exists()
    segment.unlink()
    assert analyze_main([str(snap), "--out", str(tmp_path / "o")]) == 2
    assert f"segment {0:020d} is missing" in one_line(capsys.readouterr().err)


def test_driver_read_max_takes_sizes_and_refuses_anything_else(store, tmp_path, capsys, no_spark):
    assert [cli._size(t) for t in ("0", "4096", "64M", "64MiB", "1k", "2G")] == [0, 4096, 64 << 20, 64 << 20, 1024,
                                                                                  2 << 30]
    assert analyze_main([str(store), "--out", str(tmp_path / "o"), "--driver-read-max", "12Q"]) == 2
    assert "'12Q' is not a size" in one_line(capsys.readouterr().err)


def test_remote_urls_are_checked_before_anything_starts(store, tmp_path, capsys, no_spark):
    out = str(tmp_path / "o")
    assert analyze_main([str(store), "--out", out, "--remote", "http://127.0.0.1:15002"]) == 2
    assert "is not a Spark Connect URL: use sc://HOST:PORT" in one_line(capsys.readouterr().err)
    assert analyze_main([str(store), "--out", out, "--remote", "sc://127.0.0.1:1", "--master", "local[2]"]) == 2
    assert one_line(capsys.readouterr().err).endswith("give --master or --remote, not both")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]                        # bound, not listening: refused
        assert analyze_main([str(store), "--out", out, "--remote", f"sc://127.0.0.1:{port}"]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"cannot reach the Spark Connect server sc://127.0.0.1:{port}" in line and "is it running?" in line


def test_a_failure_out_of_spark_is_one_line_of_its_message():
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    from rocketmq_emulator.spark_analytics.errors import spark_failure_line

    java = Py4JError("An error occurred while calling o12.collectToPython.\n: org.apache.spark.SparkException: "
                     "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file x.parquet.\n\tat org.a.B(B.scala)")
    assert spark_failure_line(java) == ("Spark failed while running the analysis: [FAILED_READ_FILE.NO_HINT] "
                                        "Encountered error while reading file x.parquet.")
    rpc = PySparkException("<_InactiveRpcError of RPC that terminated with:\n\tstatus = StatusCode.UNAVAILABLE\n"
                           '\tdetails = "failed to connect to all addresses"\n\tdebug_error_string = "..."\n>')
    assert spark_failure_line(rpc) == ("Spark failed while running the analysis: the Spark Connect server answered "
                                       "StatusCode.UNAVAILABLE: failed to connect to all addresses")
    assert spark_failure_line(ValueError("ours")) is None


def test_an_argument_with_a_newline_or_an_escape_stays_in_one_escaped_error_line(tmp_path, capsys, no_spark):
    """issue 46.8: a path or value a user pasted with a newline or an ESC sequence does
    not split the error line or drive the terminal."""
    hostile = str(tmp_path / "snap\n2024-01-01 ERROR forged\x1b[31m")
    for argv in ([hostile, "--out", str(tmp_path / "o")], ["--delay-levels", "1s\x1b[2J", "x", "--out", "y"],
                 ["x", "--out", "y", "--driver-read-max", "1\nforged"]):
        assert analyze_main(argv) == 2
        line = one_line(capsys.readouterr().err)
        assert "\x1b" not in line and "\n" not in line, line
    assert cli.snapshot_main(["--data-dir", hostile, "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err, err
