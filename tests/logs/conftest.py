"""The hand-made log cases of tests/logs/cases; the real logs come from the ``testbed_logs`` fixture."""

from __future__ import annotations

from pathlib import Path

CASES = Path(__file__).resolve().parent / "cases"
