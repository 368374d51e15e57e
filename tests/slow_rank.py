"""A rank target whose module is slow to import: a rank still starting when an interrupt comes
(tests/test_rank_launcher.py). With LABKIT_TEST_RANK_STARTING set, the import says so in that file, then
takes 3 s more."""

import os
import time
from pathlib import Path

_starting = os.environ.get("LABKIT_TEST_RANK_STARTING")
if _starting and not Path(_starting).exists():
    Path(_starting).write_text(str(os.getpid()))
    time.sleep(3.0)  # the rank is unpickling its target: _run_rank has not ignored SIGINT yet


def answer(rank):
    return 42
