"""README examples kept as tests: the text between a test file's ``# --- README example:
begin ---`` and ``end`` markers must be one of README.md's python blocks, verbatim."""
from __future__ import annotations

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def assert_readme_shows(test_file: str) -> None:
    here = pathlib.Path(test_file).read_text()
    example = here.split("# --- README example: begin ---\n")[1].split("# --- README example: end ---")[0]
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert example.strip() in [b.strip() for b in blocks], f"README.md and {pathlib.Path(test_file).name} differ"
