"""Trusted reading of lab-book notebooks and sweep folders handed in as homework evidence.

    run, problems = evidence.notebook_run("runs/groq/seq64.ipynb")     # an executed lab-book notebook
    rows = evidence.sweep_runs("runs/graphcore")                        # a `labkit sweep --out` folder

What counts, and why the grader reads it again in a sandbox (:func:`trusted_record`) or re-runs it
(:func:`rerun_smallest`, ``labkit grade --reproduce``): docs/grading.md (Trusted numbers).
"""

from __future__ import annotations

import csv
import os
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Tuple

from labkit import results, sweep
from labkit.errors import LabkitError
from labkit.files import NotAFile, regular_file
from labkit.sweep.planning import RUNS
from labkit.results import Run, same_value
from labkit.testbeds.homework.hardware import PORTABLE_CPU, where_it_ran

__all__ = ["SPECS", "OLDER_SPECS", "MAIN_RECORD", "EvidenceError", "notebook_run", "sweep_runs", "trusted_record",
           "lab_book_notebook", "rerun_smallest"]

#: The lab-book notebooks the homework accepts, by exercise: the spec in their metadata.
SPECS = {
    "graphcore/mnist": "labkit.testbeds.graphcore:SPEC",
    "cerebras/bert_large": "labkit.testbeds.cerebras:SPEC",
    "sambanova/bert_large": "labkit.testbeds.sambanova:SPEC",
    "groq/bert_tiny": "labkit.testbeds.groq:SPEC",
    # the 2025 homework's
    "cerebras/llama2_7b": "labkit.testbeds.cerebras.llama2_7b:SPEC",
    "sambanova/inference": "labkit.testbeds.sambanova.inference:SPEC",
}
#: The same specs under the names lab-book notebooks made before the five steps give them.
OLDER_SPECS = {
    "graphcore/mnist": "labkit.testbeds.graphcore:MNIST_SPEC",
    "cerebras/bert_large": "labkit.testbeds.cerebras:BERT_SPEC",
    "sambanova/bert_large": "labkit.testbeds.sambanova:BERT_SPEC",
    "groq/bert_tiny": "labkit.testbeds.groq:BERT_TINY_SPEC",
}
#: The name every lab-book notebook records its run under.
MAIN_RECORD = "run"
_RESULTS_CSV = "results.csv"
_FIXED = ("run", "status", "error", "duration", "notebook", "gpu")


class EvidenceError(LabkitError, ValueError):
    """A notebook or sweep folder that cannot count as evidence; the message says why."""


def _exercise_of(metadata: Mapping[str, Any]) -> Optional[str]:
    spec = (metadata.get("labkit") or {}).get("spec")
    for exercise, name in SPECS.items():
        if spec in (name, OLDER_SPECS.get(exercise)):
            return exercise
    return None


def notebook_run(path: str) -> Tuple[Run, Dict[str, Any]]:
    """The main record of an executed lab-book notebook, and the notebook's papermill facts.

    Raises :class:`EvidenceError` naming the file and what is wrong with it.
    """
    name = os.fspath(path)
    try:
        if os.path.lexists(name):  # a FIFO named *.ipynb would keep the reader waiting for ever
            regular_file(name, "notebook")
        read = results.read(name)  # its errors name the file and what is wrong with it
    except (FileNotFoundError, ValueError) as exc:
        raise EvidenceError(str(exc)[:300]) from None
    exercise = _exercise_of(read.metadata)
    if exercise is None:
        raise EvidenceError("{}: not an executed lab-book notebook of a homework exercise (its metadata names no "
                            "labkit spec among {})".format(name, ", ".join(SPECS)))
    if read.error:
        raise EvidenceError("{}: the notebook did not run to the end ({})".format(name, read.error[:200]))
    data = read.records.get(MAIN_RECORD)
    if not isinstance(data, dict) or "metrics" not in data:
        raise EvidenceError("{}: no '{}' record: was the notebook executed (labkit run / labkit sweep)?".format(
            name, MAIN_RECORD))
    run = Run.from_dict(data)
    if run.exercise != exercise:
        raise EvidenceError("{}: the record is of {} but the notebook is the {} exercise".format(name, run.exercise, exercise))
    for key, value in read.parameters.items():
        if key in run.params and not same_value(run.params[key], value) and key != "device":
            raise EvidenceError("{}: the notebook ran with {} = {!r} but its record says {!r}".format(
                name, key, value, run.params[key]))
    duration = (read.metadata.get("papermill") or {}).get("duration")
    return run, {"duration": duration, "parameters": dict(read.parameters), "exercise": exercise}


def _number(text: str) -> Any:
    if text in ("True", "False"):
        return text == "True"
    try:
        return float(text)
    except ValueError:
        return text


def sweep_runs(folder: str) -> List[Tuple[str, Optional[Run], str]]:
    """Every run of a sweep folder, as ``(notebook path, Run or None, problem)``, in results.csv order.

    A run counts (its ``Run`` is given) when its row in results.csv agrees with the notebook's
    record; otherwise ``problem`` says what differs, or why the run does not count (it failed).
    """
    table, rows = _sweep_table(folder)
    found: List[Tuple[str, Optional[Run], str]] = []
    for notebook, row in rows:
        try:
            run = notebook_run(notebook)[0] if row.get("status") in _COUNTED else None
        except EvidenceError as exc:
            found.append((notebook, None, str(exc)))
            continue
        problem = _row_problem(table, row, run)
        found.append((notebook, None, problem) if problem else (notebook, run, ""))
    return found


_COUNTED = ("complete", "diverged")  # a sweep row whose run counts as evidence


def _sweep_table(folder: str) -> Tuple[str, List[Tuple[str, Dict[str, str]]]]:
    """results.csv of a sweep folder, and its rows with the path of each run's notebook."""
    folder = os.fspath(folder)
    table = os.path.join(folder, _RESULTS_CSV)
    try:
        regular_file(table, "sweep table")
    except NotAFile as exc:
        raise EvidenceError(str(exc)) from None
    except FileNotFoundError:
        raise EvidenceError("{}: no {} (is the sweep finished? run the same `labkit sweep` command again)".format(
            folder, _RESULTS_CSV)) from None
    with open(table, newline="") as f:
        return table, [(os.path.join(folder, row.get("notebook") or ""), row) for row in csv.DictReader(f)]


def _row_problem(table: str, row: Mapping[str, str], run: Optional[Run]) -> str:
    """Why a sweep's run does not count ("" when it does): it did not complete, or its row and notebook differ."""
    if row.get("status") not in _COUNTED or run is None:
        return "the run did not complete ({}: {})".format(row.get("status"), (row.get("error") or "")[:120])
    problems = []
    for key, text in row.items():
        if key in _FIXED or key is None or text == "":
            continue
        if key.startswith(MAIN_RECORD + "."):  # a notebook with several records: "run.global_rate"
            key = key[len(MAIN_RECORD) + 1:]
        if key in run.params:
            wanted: Any = run.params[key]
        elif key in run.metrics:
            wanted = run.metrics[key]
        else:
            continue
        value = _number(text)
        if isinstance(wanted, bool) or isinstance(value, bool) or not isinstance(value, float):
            ok = str(wanted) == str(value) if not isinstance(wanted, bool) else value is wanted
        else:
            ok = isinstance(wanted, (int, float)) and same_value(float(wanted), value)
        if not ok:
            problems.append("{} = {} in {} but {!r} in the notebook".format(key, text, _RESULTS_CSV, wanted))
    return "{} disagrees with the run's notebook: {}".format(table, "; ".join(problems[:3])) if problems else ""


def trusted_record(params: Mapping[str, Any]) -> Dict[str, Any]:
    """``{"params", "metrics"}`` of the notebook ``params['evidence']``, read with the checks above.

    For a notebook inside a sweep folder, its results.csv row must agree too.
    """
    path = params.get("evidence")
    if not isinstance(path, str):
        raise EvidenceError("the record names no evidence notebook (params['evidence'])")
    run, _facts = notebook_run(path)
    mine = os.path.abspath(path)
    runs_dir = os.path.dirname(mine)
    out = os.path.dirname(runs_dir)
    # in a sweep folder (OUT/runs/NAME.ipynb) its own row of results.csv must agree (the other runs are not read)
    if os.path.basename(runs_dir) == RUNS and sweep.is_sweep(out):
        table, rows = _sweep_table(out)
        for notebook, row in rows:
            if os.path.abspath(notebook) == mine:
                problem = _row_problem(table, row, run)
                if problem:
                    raise EvidenceError(problem)
    return {"params": dict(run.params), "metrics": dict(run.metrics)}


def lab_book_notebook(exercise: str) -> str:
    """The lab book's own notebook for ``exercise``, beside the installed labkit package."""
    import labkit

    root = os.path.dirname(os.path.dirname(os.path.abspath(labkit.__file__)))
    path = os.path.join(root, "notebooks", exercise + ".ipynb")
    if exercise not in SPECS or not os.path.isfile(path):
        raise EvidenceError("the lab book's notebook for {} is not at {} (labkit must be installed from its "
                            "repository, `pip install -e .`, to re-run portable runs)".format(exercise, path))
    return path


def rerun_smallest(params: Mapping[str, Any]) -> Dict[str, Any]:
    """Re-run the shortest portable CPU run of ``params['candidates']`` (records' params) with the lab book's
    notebook (docs/grading.md, Trusted numbers): ``{"notebook", "seconds", "problems"}``, no problems when
    :func:`labkit.results.compare_records` finds the two records equal."""
    from labkit.execute import run_notebook

    limit = float(params.get("max_seconds", 300))
    chosen = None
    skipped: List[str] = []
    for candidate in params.get("candidates") or []:
        try:
            run, facts = notebook_run(candidate.get("evidence"))
        except EvidenceError as exc:
            skipped.append(str(exc))
            continue
        seconds = facts["duration"] if isinstance(facts["duration"], (int, float)) else float("inf")
        if where_it_ran(run) != PORTABLE_CPU or seconds > limit:
            continue
        if chosen is None or seconds < chosen[2]:
            chosen = (candidate["evidence"], run, seconds, facts)
    if chosen is None:
        raise EvidenceError("no portable CPU run that took at most {:g} s to re-run{}".format(
            limit, " ({})".format(skipped[0]) if skipped else ""))
    path, run, _seconds, facts = chosen
    with tempfile.TemporaryDirectory(prefix="labkit-rerun-") as tmp:
        out = os.path.join(tmp, "rerun.ipynb")
        outcome = run_notebook(lab_book_notebook(facts["exercise"]), out, facts["parameters"], cwd=tmp, check=False)
        if outcome.status != "complete":
            return {"notebook": path, "seconds": outcome.duration,
                    "problems": ["the re-run ended with {}: {}".format(outcome.status, (outcome.error or "")[:200])]}
        again = results.read(out).records.get(MAIN_RECORD)
    if not isinstance(again, dict):
        return {"notebook": path, "seconds": outcome.duration, "problems": ["the re-run recorded no run"]}
    rtol = float(params.get("tolerance", 1e-6))
    return {"notebook": path, "seconds": round(outcome.duration, 2),
            "problems": results.compare_records(run.to_dict(), again, rtol=rtol)}
