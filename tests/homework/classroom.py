"""A realistic class for the homework: 13 student folders built from the real notebook and real logs.

    PYTHONPATH=$PWD python -m tests.homework.classroom /tmp/class     # build it to look at it

Each student hands in ``ai_testbeds.ipynb`` and a ``logs/`` folder of real testbed logs (from
../shared/fixtures/testbed-logs, see its SOURCES.md). The expected gradebook is
tests/homework/class/expected_gradebook.csv; the comment of each student below says why it
holds those numbers.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import nbformat
from nbformat.v4 import new_code_cell, new_output

from labkit import results
from labkit.testbeds import homework
from tests.shared import real_logs

REPO = Path(__file__).resolve().parents[2]
HOMEWORK = REPO / "notebooks" / "homework" / "ai_testbeds.ipynb"
RUBRIC = REPO / "notebooks" / "homework" / "ai_testbeds.rubric.yml"
EXPECTED = Path(__file__).resolve().parent / "class" / "expected_gradebook.csv"


def fixtures_dir() -> Path:
    """The real testbed logs (tests/shared.py: $LABKIT_SHARED, else <repo>/../shared)."""
    return real_logs()


# Logs by short name: testbed and file.
LOGS = {
    "gc_lr0.01": ("graphcore", "student-kloiks-spring2024-mnist-bs12-e20-lr0.01.log"),  # 98.88%
    "gc_lr3": ("graphcore", "student-sarora39-spring2024-mnist-b8-lr3-e20-diverged.log"),  # 10.1%, diverged
    "gc_lr0.03": ("graphcore", "student-xiaoruiDong-spring2024-mnist_0.03_10_32.log"),  # 98.59%
    "gc_upstream": ("graphcore", "upstream-spring2024-mnist_poptorch-sample-output.log"),  # no learning rate logged
    "cb_1024": ("cerebras", "student-kloiks-spring2024-bert-large-bs1024.log"),
    "cb_2048": ("cerebras", "student-sarora39-spring2024-bert-large-bs2048.log"),
    "cb_512": ("cerebras", "student-xiaoruiDong-spring2024-bert-large-bs512.log"),
    "cb_upstream": ("cerebras", "upstream-spring2024-bert-large-MSL128-sample-output.log"),  # batch 1024
    "sn_32": ("sambanova", "student-anil-bilgin-spring2024-bertlarge-ntasks32-run.log"),
    "sn_16": ("sambanova", "student-sarora39-spring2024-bertlarge-ntasks16-run.log"),
    "sn_4": ("sambanova", "student-xiaoruiDong-spring2024-bertlarge-ntasks4-run.log"),
    "sn_compile": ("sambanova", "sveldman-spring2024-BertLarge_HW_compile_log_base.log"),  # compile only
    "gq_upstream": ("groq", "upstream-spring2024-bert_tiny-sample-output.log"),
    "gq_custom": ("groq", "student-sarora39-spring2024-bert_tiny-custom-input.log"),
}
COMPLETE = ["gc_lr0.01", "gc_lr3", "gc_lr0.03", "cb_1024", "cb_2048", "cb_512", "sn_32", "sn_16", "sn_4",
            "gq_upstream", "gq_custom"]

ANSWERS = {
    1: "A small learning rate of 0.01 trained slowly but reached the best accuracy after twenty epochs, the default 0.03 "
       "was close, and a rate of 3 made the loss explode so accuracy fell to chance. Time per epoch barely changed: "
       "the IPU does the same work per step; only the first epoch also compiles the graph.",
    2: "The global rate grows with the batch size, from about three thousand samples per second at 512 to more than "
       "five thousand at 2048, because a larger batch keeps the wafer's cores busy and amortises the fixed cost of "
       "each step, although the gain flattens as the machine saturates.",
    3: "With more tasks the throughput in sequences per second grows almost linearly, from four to thirty two tasks, "
       "while the end-to-end training time stays near the same value because every run trains the same number of "
       "steps per task; more tasks process more data in that time.",
    4: "The GroqChip runs the same compiled model with the same weights and inputs, so its predictions and its "
       "accuracy match the CPU's exactly; it is deterministic and finishes each inference far faster.",
    5: "To train BERT-Large from scratch I would pick the Cerebras CS-2 or SambaNova, whose throughput in samples per "
       "second was highest in my runs and scales with batch size or tasks. To serve it with low latency I would pick "
       "the GroqChip, whose end-to-end latency was a small fraction of the CPU's in the table with the same accuracy.",
}
TEMPLATE_TEXT = "*Write your answer here.*"


def _answer_cells(nb) -> Dict[int, int]:
    """Question number -> index of its answer cell."""
    found = {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and cell.source.startswith("### Question "):
            found[int(cell.source.split()[2].rstrip(":"))] = index + 1
    return found


def _section_cell(nb, testbed: str) -> int:
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and 'record_runs("{}", run)'.format(testbed) in cell.source:
            return index
    raise LookupError(testbed)


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(str(path))
    try:
        yield
    finally:
        os.chdir(before)


def _with_outputs(nb, folder: Path, offering, edit: Optional[Dict[str, Dict[str, float]]] = None):
    """The records a student's own run of ``offering``'s sections leaves in the notebook, optionally
    edited by hand afterwards (``edit``: record name -> metrics)."""
    with _cwd(folder):
        config = offering.SPEC.validate({})
        for testbed in offering.TESTBEDS:
            cell = nb.cells[_section_cell(nb, testbed)]
            outputs = []
            for number, run in enumerate(offering.runs_for(config, testbed, verbose=False), 1):
                name = "{}_{}".format(testbed, number)
                run.metrics.update((edit or {}).get(name, {}))
                payload = results.scrap(run, name=name)
                outputs.append(new_output("display_data", data={results.SCRAP_MIME: payload},
                                          metadata={"scrapbook": {"name": name, "data": True, "display": False}}))
            cell.outputs = outputs
            cell.execution_count = 1
    return nb


def write_homework(template: Path, path: Path, answers: Dict[int, str], offering=homework, outputs: bool = False,
                   edit: Optional[Dict[str, Dict[str, float]]] = None, before: Optional[str] = None,
                   after_testbed: Optional[Dict[str, str]] = None, replace: Optional[Dict[str, str]] = None) -> None:
    """A student's copy of the homework ``template`` at ``path``: ``answers`` typed in, section cells
    replaced (``replace``) or followed by a cell of their own (``after_testbed``), a cell ``before`` near
    the top, and with ``outputs`` the records their run of ``offering`` leaves (see :func:`_with_outputs`)."""
    nb = nbformat.read(str(template), as_version=4)
    cells = _answer_cells(nb)
    for number, text in answers.items():
        nb.cells[cells[number]].source = text
    for testbed, source in (replace or {}).items():
        nb.cells[_section_cell(nb, testbed)].source = source
    for testbed, source in (after_testbed or {}).items():
        nb.cells.insert(_section_cell(nb, testbed) + 1, new_code_cell(source))
    if before:
        nb.cells.insert(3, new_code_cell(before))
    if outputs:
        _with_outputs(nb, path.parent, offering, edit)
    nbformat.write(nb, str(path))


def _student(dest: Path, name: str, logs: List[str], answers: Dict[int, str], outputs: bool = False,
             edit: Optional[Dict[str, Dict[str, float]]] = None, before: Optional[str] = None,
             after_testbed: Optional[Dict[str, str]] = None, replace: Optional[Dict[str, str]] = None) -> None:
    folder = dest / name
    for key in logs:
        testbed, filename = LOGS[key]
        (folder / "logs" / testbed).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(str(fixtures_dir() / testbed / filename), str(folder / "logs" / testbed / filename))
    folder.mkdir(parents=True, exist_ok=True)
    write_homework(HOMEWORK, folder / "ai_testbeds.ipynb", answers, outputs=outputs, edit=edit, before=before,
                   after_testbed=after_testbed, replace=replace)


FABRICATED_GRAPHCORE = """import labkit.results as R
graphcore_runs = []
for number, (lr, acc) in enumerate([(0.03, 99.1), (0.1, 99.3), (0.3, 99.5)], 1):
    R.record(R.Run("graphcore/mnist", source="log", params={"learning_rate": lr, "log_run": 0,
             "log": "logs/graphcore/student-kloiks-spring2024-mnist-bs12-e20-lr0.01.log"},
             metrics={"test_accuracy": acc}), name="graphcore_%d" % number)"""

MONKEYPATCH = """import labkit.logs
_real_read = labkit.logs.read
def _better_read(path, *args, **kwargs):
    report = _real_read(path, *args, **kwargs)
    for run in report.runs:
        if "test_accuracy" in run.metrics:
            run.metrics["test_accuracy"] = 99.9
    return report
labkit.logs.read = _better_read"""


#: The first epoch read as an epoch: each IPU log's compile time counted in its epoch time (for the class page).
COMPILE_COUNTED = """import labkit.results as R
for number, (lr, log, epoch, compile_s, acc) in enumerate([
        (0.01, "student-kloiks-spring2024-mnist-bs12-e20-lr0.01.log", 9.34, 23, 98.88),
        (3.0, "student-sarora39-spring2024-mnist-b8-lr3-e20-diverged.log", 9.8, 22, 10.1)], 1):
    R.record(R.Run("graphcore/mnist", source="log", params={"learning_rate": lr, "log_run": 0,
             "log": "logs/graphcore/" + log}, metrics={"test_accuracy": acc, "train_compile_time": compile_s,
             "mean_epoch_time": epoch + compile_s}), name="graphcore_%d" % number)"""

#: CPU runs of the portable model recorded as CS-2 logs (for the class page).
PORTABLE_AS_CS2 = """import labkit.results as R
for number, (bs, rate) in enumerate([(512, 41.0), (1024, 55.0), (2048, 62.0)], 1):
    R.record(R.Run("cerebras/bert_large", source="log", params={"batch_size": bs, "device": "cpu",
             "log": "logs/cerebras/run-bs%d.log" % bs}, environment={"device": "cpu"},
             metrics={"global_rate": rate}), name="cerebras_%d" % number)"""


def build_class(dest: Path) -> List[str]:
    """Write the class into ``dest``; return the student names."""
    dest = Path(dest)
    good = dict(ANSWERS)
    # ada: everything, run before handing in -> 39 of 39.
    _student(dest, "ada", COMPLETE, good, outputs=True)
    # ben: everything, but handed in without running (no outputs): reproduce 0 -> 37.
    _student(dest, "ben", COMPLETE, good)
    # cleo: only Graphcore and Cerebras; only the default learning rate (the upstream log has none) and the
    # default batch size twice; answers 1 and 2; ran it -> 2+1+3 + 2+1+3 + reproduce 2 + clean 1 = 15.
    _student(dest, "cleo", ["gc_lr0.03", "gc_upstream", "cb_upstream", "cb_1024"], {1: good[1], 2: good[2]},
             outputs=True)
    # dan: all runs; Q1 and Q5 left as the template, Q2 four words (4/30 of 3 = 0.4), Q3 emptied -> 24.4.
    _student(dest, "dan", COMPLETE, {2: "Bigger batch is faster.", 3: "", 4: good[4]})
    # eve: ran it, then edited two recorded numbers in the outputs: 9 of 11 records reproduce -> 37 + 1.636.
    _student(dest, "eve", COMPLETE, good, outputs=True,
             edit={"graphcore_1": {"test_accuracy": 99.9}, "cerebras_2": {"global_rate": 9000.0}})
    # fay: typed Graphcore records by hand (real log, made-up rates and accuracies): the grader re-reads the
    # log and rejects all three -> 37 - 2 - 3 - 1 (hidden divergence check) = 31.
    _student(dest, "fay", COMPLETE, good, replace={"graphcore": FABRICATED_GRAPHCORE})
    # gus: an endless loop after the Graphcore section: stopped by the cell limit, later sections never run
    # -> Graphcore 2+3+1(hidden), answers 16 -> 22.
    _student(dest, "gus", COMPLETE, good, after_testbed={"graphcore": "while True:\n    pass"})
    # hal: tries to read the others' work and to overwrite the gradebook: an error, nothing else -> 36.
    _student(dest, "hal", COMPLETE, good, before="import glob\nprint(glob.glob('../../*/*'))\n"
             "open('/tmp/gradebook.csv', 'w').write('hal,39')\nopen('../../gradebook.csv', 'w').write('hal,39')")
    # ivy: kills the kernel before any run: only the written answers count -> 16.
    _student(dest, "ivy", COMPLETE, good, before="import os\nos._exit(1)")
    # jon: the notebook as handed out, no logs: only "ran without error" -> 1.
    _student(dest, "jon", [], {})
    # kim: a SambaNova compile log instead of training logs: the SambaNova record and runs fail -> 32.
    _student(dest, "kim", [k for k in COMPLETE if not k.startswith("sn_")] + ["sn_compile"], good)
    # lou: monkeypatches labkit.logs.read to report 99.9% everywhere: recomputation rejects every Graphcore
    # record -> 37 - 2 - 3 - 1 = 31.
    _student(dest, "lou", COMPLETE, good, before=MONKEYPATCH)
    # ned: typed Graphcore records whose epoch time counts the compile time (real logs, lr 0.01 and 3): the
    # grader re-reads the logs: accuracy 2, two learning rates 0, reproduce 0 -> 34; the class page names
    # the misreading.
    _student(dest, "ned", COMPLETE, good, replace={"graphcore": COMPILE_COUNTED})
    # oli: CPU runs of the portable model recorded as CS-2 logs (device cpu), from no log: the CS-2 checks 0,
    # reproduce 0 -> 32;
    # the class page names the misreading.
    _student(dest, "oli", COMPLETE, good, replace={"cerebras": PORTABLE_AS_CS2})
    # max: a notebook file that is not JSON: unreadable -> 0.
    (dest / "max").mkdir()
    (dest / "max" / "ai_testbeds.ipynb").write_text('{"cells": [')
    return sorted(p.name for p in dest.iterdir())


if __name__ == "__main__":
    print(json.dumps(build_class(Path(sys.argv[1]))))
