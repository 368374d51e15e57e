"""Ctrl-C at every moment of every notebook keeps what was measured.

For each of the nine notebooks, at small sizes, `labkit run NOTEBOOK OUTPUT --show-output` runs in a
process group of its own and gets a SIGINT, as a terminal sends it, at one phase boundary its output
shows (driven by the output, never by sleeps): one run per boundary. Each time:

- exit status 130, one summary line on stderr, no traceback anywhere;
- the executed notebook is written;
- after the first measurement: a record (``labkit results OUT``) with status interrupted, the phase it
  stopped in, and every figure measured by then; before it: no record, and the summary says so.

    .venv/bin/python -m pytest tests/interrupts -q                    # every notebook x phase
    .venv/bin/python -m pytest tests/interrupts -q -k inference       # one notebook's
    LABKIT_INTERRUPT_TABLE=kept.jsonl ...                             # also what each interrupt kept

An interrupt is a signal: it lands a moment after the text that prompted it, later still on a
busy machine. So a phase is checked as "this one or the next one", and the figures as "at least
those measured when the text showed".
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import nbformat
import pytest

from labkit import results
from tests.interrupts.moments import WALKS, Moment, described, matches, recorded_phase, wanted
from tests.interrupts.terminal import ROOT, Ended, Terminal

pytestmark = pytest.mark.timing  # each test presses Ctrl-C at a moment

CASES = [pytest.param(key, moment, id="{}-{}{}".format(key, moment.phase.replace(" ", "_").replace("/", "of"),
                                                     "" if number == 0 or moment.phase != walked[number - 1].phase
                                                     else number))
         for key, walk in WALKS.items() for walked in [[m for m in walk.moments if m.walked]]
         for number, moment in enumerate(walked)]


def kept(key: str, out: Path) -> Tuple[List[results.Run], Optional[str]]:
    """The runs of exercise ``key`` the output notebook records, and its error line."""
    found = results.read(out)
    return [run for run in found.runs if run.exercise == key], found.error


def _note(key: str, moment: Moment, ended: Ended, runs: Sequence[results.Run], out: Path) -> None:
    """With LABKIT_INTERRUPT_TABLE, one JSON line saying what this interrupt kept (the issue's table)."""
    table = os.environ.get("LABKIT_INTERRUPT_TABLE")
    if not table:
        return
    line = {"notebook": key, "phase": moment.phase, "exit": ended.code, "written": out.exists(),
            "summary": ended.stderr_lines[-1] if ended.stderr_lines else "",
            "stderr_lines": len(ended.stderr_lines), "traceback": "Traceback" in ended.stdout + ended.stderr,
            "runs": [{"status": r.status, "phase": recorded_phase(r), "stopped_at": r.stopped_at(),
                      "metrics": sorted(r.metrics)} for r in runs]}
    with open(table, "a") as f:
        f.write(json.dumps(line) + "\n")


@pytest.mark.parametrize("key, moment", CASES)
def test_ctrl_c_at_a_phase_boundary_keeps_what_was_measured(key, moment, tmp_path):
    walk = WALKS[key]
    cwd = tmp_path
    if walk.evidence:
        cwd = tmp_path / "handin"
        shutil.copytree(str(ROOT / walk.evidence), str(cwd))
    out = tmp_path / "out.ipynb"
    run = Terminal(ROOT / walk.notebook, out, walk.arguments + ("--cwd", str(cwd)), cwd=tmp_path)
    try:
        run.wait_for(moment.after)
        run.ctrl_c()
        ended = run.finish()
    except Exception as exc:  # the marker never showed, or the run did not end: in the table too
        _note(key, moment, Ended(-1, run.tail(), "{}: {}".format(type(exc).__name__, str(exc).splitlines()[0])), [], out)
        raise
    finally:
        run.kill()
    runs, _ = kept(key, out) if out.exists() else ([], None)
    _note(key, moment, ended, runs, out)

    said = "\n".join(ended.stderr_lines)
    assert ended.code == 130, "exit {}; stderr:\n{}".format(ended.code, ended.stderr)
    assert "Traceback" not in ended.stdout + ended.stderr, ended.stdout[-3000:] + ended.stderr
    assert len(ended.stderr_lines) == 1 and said.startswith("labkit run: "), said
    assert out.exists() and nbformat.read(str(out), as_version=4).cells, "the executed notebook was not written"
    landed = [m for m in walk.from_(moment) if matches(m, runs, said, walk.phases_at(moment))]
    assert landed, "Ctrl-C at {!r} ({}) kept {}; wanted {}".format(
        moment.after, moment.phase, described(runs, said), " or ".join(wanted(m) for m in walk.from_(moment)))


