"""No exception escapes labkit.logs.read, whatever it is fed: random bytes and text, and the real
testbed logs truncated, with bytes flipped, lines shuffled or garbage inserted.

    PYTHONPATH=$PWD python -m pytest tests/logs/test_robust.py -q

Derandomized with a fixed number of examples so CI runs the same cases every time.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import labkit.logs
from labkit.logs import LogReport
from tests.logs.conftest import CASES
from tests.shared import real_logs

ROBUST = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _corpus() -> List[bytes]:
    real = real_logs()
    files = sorted(p for p in real.rglob("*") if p.is_file() and p.name != "SOURCES.md") if real.is_dir() else []
    files += sorted(p for p in CASES.iterdir() if p.is_file())
    # Keep examples small and quick: at most the first 24 KB of each log (its head is what
    # detection looks at; the rest is more of the same lines).
    return [p.read_bytes()[:24576] for p in files]


CORPUS = _corpus()
FORMATS = [None] + list(labkit.logs.FORMATS)


def _check(report: LogReport) -> None:
    assert isinstance(report, LogReport)
    for run in report.runs:
        run.to_dict()  # JSON-safe, whatever was read
    assert not any("could not be read" in note for note in report.notes), report.notes


@ROBUST
@given(st.binary(max_size=4096), st.sampled_from(FORMATS))
def test_random_bytes(data, fmt):
    _check(labkit.logs.read(data, format=fmt))


@ROBUST
@given(st.lists(st.sampled_from(list("|+-=>.:/%[]() 0123456789abcdeEnNaif\r\n\t\x1b") + ["Epoch ", "Step=",
       "Loss=", "Rate=", " samples/sec", "COMPILE END AT ", "Duration:  ", "| Source |", "Accuracy on test set: ",
       "global_step:", "|step_loss:", "'e2e_train_time': ", "SLURM_NTASKS=", "Model:  BertLarge", "- loss: "]),
       max_size=300).map("".join), st.sampled_from(FORMATS))
def test_random_log_like_text(text, fmt):
    # A line end makes it text for sure (a bare "0/1" would be taken as a missing file's path).
    _check(labkit.logs.read(text + "\n", format=fmt))


@st.composite
def mutated_fixture(draw):
    data = bytearray(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "shuffle", "garbage", "duplicate"]))
        rnd = random.Random(draw(st.integers(0, 2 ** 32 - 1)))
        if not data:
            break
        if kind == "truncate":
            data = data[:rnd.randrange(len(data))]
        elif kind == "flip":
            for _ in range(rnd.randint(1, 50)):
                i = rnd.randrange(len(data))
                data[i] = rnd.randrange(256)
        elif kind == "shuffle":
            lines = bytes(data).split(b"\n")
            rnd.shuffle(lines)
            data = bytearray(b"\n".join(lines))
        elif kind == "garbage":
            i = rnd.randrange(len(data))
            junk = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 200)))
            data[i:i] = junk
        else:
            i, j = sorted(rnd.randrange(len(data)) for _ in range(2))
            data[j:j] = data[i:j]
    return bytes(data)


@pytest.mark.skipif(not CORPUS, reason="no logs to mutate")
@ROBUST
@given(mutated_fixture(), st.sampled_from(FORMATS))
def test_mutated_real_logs(data, fmt):
    _check(labkit.logs.read(data, format=fmt))


@pytest.mark.skipif(not CORPUS, reason="no logs to mutate")
@settings(max_examples=50, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(mutated_fixture())
def test_mutated_real_logs_from_files(tmp_path, data):
    path = Path(tmp_path) / "mutated.log"
    path.write_bytes(data)
    _check(labkit.logs.read(path))
