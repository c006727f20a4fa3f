"""Config documents keep a .bak of their previous version, as upstream's ConfigManager
does (issue 17, item 6): a corrupt consumerOffset.json, delayOffset.json or topics.json
falls back to it with one WARNING; with no usable .bak the error says what is wrong,
in one line, instead of a traceback."""
from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from rocketmq_emulator.store import MessageStore, StoreConfig, StoreError

CFG = StoreConfig(fsync=False)


def _two_versions(root) -> None:
    """Offsets, delay offsets and topics saved twice: the .bak holds the first version."""
    with MessageStore(root, CFG) as s:
        s.commit_offset("G", "T", 0, 5)
        s.set_delay_offsets({3: 7})
        s.save_config("topics", {"T": 1})
        s.flush()
        s.commit_offset("G", "T", 0, 9)
        s.set_delay_offsets({3: 8})
        s.save_config("topics", {"T": 2})


def test_each_write_keeps_the_previous_version_as_bak(tmp_path):
    _two_versions(tmp_path)
    cdir = tmp_path / "config"
    assert json.loads((cdir / "consumerOffset.json.bak").read_text()) == {"offsetTable": {"T@G": {"0": 5}}}
    assert json.loads((cdir / "consumerOffset.json").read_text()) == {"offsetTable": {"T@G": {"0": 9}}}
    assert json.loads((cdir / "delayOffset.json.bak").read_text()) == {"offsetTable": {"3": 7}}
    assert json.loads((cdir / "topics.json.bak").read_text()) == {"T": 1}
    assert not [p.name for p in cdir.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("damage", [b"{\"offsetTable\": {\"T@G\": {\"0\": 9", b"", b"\xff\xfe garbage",
                                    b'{"offsetTable": [1, 2]}', b'{"offsetTable": {"T@G": {"0": "nine"}}}'])
def test_a_corrupt_offsets_file_falls_back_to_its_bak_with_one_warning(tmp_path, caplog, damage):
    _two_versions(tmp_path)
    (tmp_path / "config" / "consumerOffset.json").write_bytes(damage)
    (tmp_path / "config" / "delayOffset.json").write_bytes(damage)
    caplog.set_level(logging.WARNING, logger="store")
    with MessageStore(tmp_path, CFG) as s:
        assert s.query_offset("G", "T", 0) == 5 and s.delay_offsets() == {3: 7}
    lines = [r.getMessage() for r in caplog.records if "backup" in r.getMessage()]
    assert len(lines) == 2 and "consumerOffset.json.bak" in lines[0] and "delayOffset.json.bak" in lines[1]


def test_a_corrupt_config_document_falls_back_to_its_bak(tmp_path, caplog):
    _two_versions(tmp_path)
    (tmp_path / "config" / "topics.json").write_text('{"T": ')
    caplog.set_level(logging.WARNING, logger="store")
    with MessageStore(tmp_path, CFG) as s:
        assert s.load_config("topics") == {"T": 1}
    assert sum("topics.json.bak" in r.getMessage() for r in caplog.records) == 1


def test_a_missing_file_with_a_bak_uses_it(tmp_path):
    _two_versions(tmp_path)
    (tmp_path / "config" / "consumerOffset.json").unlink()
    with MessageStore(tmp_path, CFG) as s:
        assert s.query_offset("G", "T", 0) == 5


@pytest.mark.parametrize("bak", [None, b"also { broken"])
def test_a_corrupt_file_without_a_usable_bak_is_a_clear_error(tmp_path, bak):
    _two_versions(tmp_path)
    cdir = tmp_path / "config"
    (cdir / "consumerOffset.json").write_text("{not json")
    if bak is None:
        (cdir / "consumerOffset.json.bak").unlink()
    else:
        (cdir / "consumerOffset.json.bak").write_bytes(bak)
    with pytest.raises(StoreError) as info:
        MessageStore(tmp_path, CFG)
    text = str(info.value)
    assert "consumerOffset.json'" in text and "not a valid document" in text and "\n" not in text
    assert ("no usable backup" in text) if bak is None else ("consumerOffset.json.bak" in text)
    (cdir / "consumerOffset.json").unlink()
    (cdir / "consumerOffset.json.bak").unlink(missing_ok=True)
    with MessageStore(tmp_path, CFG) as s:               # the lock was released: removing them is the fix
        assert s.query_offset("G", "T", 0) == -1


def test_serve_on_a_corrupt_store_config_says_so_in_one_line(tmp_path):
    _two_versions(tmp_path / "data")
    cdir = tmp_path / "data" / "config"
    (cdir / "delayOffset.json").write_text("]")
    (cdir / "delayOffset.json.bak").unlink()
    proc = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "serve", "--port", "0",
                           "--data-dir", str(tmp_path / "data")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "delayOffset.json" in err and "Traceback" not in err, err
