"""The dashboard page served at ``/``: one self-contained HTML file (dashboard.html: its
style, its script and its charts inside, nothing fetched from elsewhere) that polls the
JSON views of dashboard_api.py and fault_api.py and sends its actions (move the clock,
re-drive dead letters, remove one fault rule or all of them). The charts are plain SVG written in the page: nothing to vendor, nothing
third-party to keep up to date, and what it draws (lines per second, bars per ladder
step) needs a hundred lines."""
from __future__ import annotations

from pathlib import Path

__all__ = ["PAGE"]

PAGE = Path(__file__).with_name("dashboard.html").read_text(encoding="utf-8")
