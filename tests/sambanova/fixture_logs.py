"""The real SambaNova logs (tests/shared.py: $LABKIT_SHARED, else <repo>/../shared), and a mark
that skips, naming LABKIT_SHARED, when they are missing."""

import pytest

from tests.shared import missing_message, real_logs

FIXTURES = real_logs("sambanova")

needs_logs = pytest.mark.skipif(not FIXTURES.is_dir(), reason=missing_message(FIXTURES))
