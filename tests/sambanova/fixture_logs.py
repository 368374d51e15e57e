"""Where the real SambaNova logs are: $LABKIT_SHARED, else <repo>/../shared, else /work/shared."""

import os
from pathlib import Path

import pytest

FIXTURES = None
for _root in [os.environ.get("LABKIT_SHARED", ""), str(Path(__file__).resolve().parents[3] / "shared"), "/work/shared"]:
    if _root and (Path(_root) / "fixtures" / "testbed-logs" / "sambanova").is_dir():
        FIXTURES = Path(_root) / "fixtures" / "testbed-logs" / "sambanova"
        break

needs_logs = pytest.mark.skipif(FIXTURES is None, reason="real SambaNova logs not found (set LABKIT_SHARED)")
