"""The threat model of docs/grading.md, row by row: each attack is contained, at every level it applies to.

One batch per isolation level (2 workers, the toy rubric of rubric_threats.yml) holds the attacks
on the trusted processes that run in the sandbox (the recomputation: module shadowing, evidence
paths leaving the submission) and on the kernel (a hidden error, a death mid-cell), beside two
honest submissions. What does not depend on the sandbox (the worker and the grader: a folder
named labkit where the grader starts, file names, FIFOs handed in, notebooks too big, too deep or
not UTF-8, record values, HTML; the other ways to hide a traceback, read by the worker) is in the
batch of the strongest level only.
Test names start with the row of the table they check.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell

from labkit.grading.sandbox import levels
from labkit.grading.batch import grade_class
from labkit.grading.reports.gradebook import class_summary, read_gradebook, summary_markdown
from tests.grading import attacks
from tests.grading import notebooks as N
from tests.grading.conftest import level_id

CONFINING = [level for level in levels.LEVELS if level != "none"]

HERE = Path(__file__).resolve().parent
RUBRIC = str(HERE / "rubric_threats.yml")
LIMITS = levels.Limits(notebook_s=40, cell_s=10, memory_bytes=1536 << 20, nproc=64, fsize_bytes=16 << 20,
                        output_bytes=1 << 20)
TRUE_SCORE = 97.175248  # toy.run(10, 0.3)
HONEST_TOTAL = 8.0  # score_default 2 + score_logged 2 + question 3 + runs_clean 1


def logged_run(log: str, score: float = TRUE_SCORE, name: str = "run_0", setup: str = "") -> object:
    """A cell recording the default toy run with ``params['log']`` naming its evidence."""
    return new_code_cell(setup + "import labkit.results as R\n"
                         "r = R.Run('toy/converge', params={{'steps': 10, 'rate': 0.3, 'log': {log!r}}})\n"
                         "r.add_metric('score', {score!r}, '%')\nR.record(r, name={name!r})".format(
                             log=log, score=score, name=name))


def student(subs: Path, name: str, cells, log_text: str = "", answer: str = N.GOOD_ANSWER) -> Path:
    folder = subs / name
    (folder / "logs").mkdir(parents=True)
    if log_text:
        (folder / "logs" / "run.log").write_text(log_text)
    N.write(N.homework(runs=[], before=list(cells), answer=answer), folder / "homework.ipynb")
    return folder


def hide(code: str) -> list:
    return [new_code_cell(code), new_code_cell("1 / 0")]


def build(subs: Path, grader_rows: bool) -> None:
    honest = lambda: [logged_run("logs/run.log")]  # noqa: E731
    student(subs, "honest_a", honest(), "97.175248")
    student(subs, "honest_b", honest(), "97.175248\n")
    # Module shadowing: the submission's modules must never reach the recomputation.
    attacks.shadow_labkit(student(subs, "shadow_labkit", [logged_run("logs/run.log", 100.0)], "100.0"),
                          {"score": 100.0})
    attacks.shadow_tests(student(subs, "shadow_tests", [logged_run("logs/run.log", 100.0)], "100.0"))
    attacks.shadow_modules(student(subs, "shadow_modules", [logged_run("logs/run.log", 100.0)], "100.0"))
    # Evidence paths leaving the submission (honest_b's true log, another student's file).
    other = str(subs / "honest_b" / "logs" / "run.log")
    student(subs, "path_parent", [logged_run("../honest_b/logs/run.log")])
    student(subs, "path_parent_run", [logged_run("../../../r1/share/work/logs/run.log")])
    student(subs, "path_absolute", [logged_run(other)])
    os.symlink(other, str(student(subs, "path_symlink", [logged_run("logs/other.log")]) / "logs" / "other.log"))
    os.symlink("/etc/passwd", str(student(subs, "path_passwd", [logged_run("logs/passwd.log")]) / "logs" / "passwd.log"))
    os.symlink("/dev/zero", str(student(subs, "path_devzero", [logged_run("logs/zero.log")]) / "logs" / "zero.log"))
    student(subs, "path_fifo", [logged_run("logs/pipe.log", setup="import os\nos.mkfifo('logs/pipe.log')\n")])
    # Hidden errors: the reply's status counts, however the traceback is hidden.
    student(subs, "hide_instance", [logged_run("logs/run.log")] + hide(
        "get_ipython().showtraceback = lambda *a, **k: None"), "97.175248")
    student(subs, "dies_mid_cell", [logged_run("logs/run.log"), new_code_cell(
        "import os\nprint('about to die')\nos._exit(3)  # the kernel dies with the cell unfinished")], "97.175248")
    if grader_rows:
        build_grader_rows(subs)


def build_grader_rows(subs: Path) -> None:
    """Attacks whose containment does not depend on the sandbox (the grader's and worker's side)."""
    honest = lambda: [logged_run("logs/run.log")]  # noqa: E731
    os.mkfifo(str(student(subs, "path_fifo_handed_in", honest(), "97.175248") / "logs" / "handed.fifo"))
    student(subs, "hide_class", [logged_run("logs/run.log")] + hide(
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.showtraceback = lambda *a, **k: None"), "97.175248")
    student(subs, "hide_private", [logged_run("logs/run.log")] + hide(
        "get_ipython()._showtraceback = lambda *a, **k: None"), "97.175248")
    student(subs, "hide_excepthook", [logged_run("logs/run.log")] + hide(
        "import sys\nsys.excepthook = lambda *a: None\nget_ipython().showtraceback = lambda *a, **k: None"),
        "97.175248")
    attacks.labkit_student(student(subs, "labkit", [logged_run("logs/run.log")], "97.175248"))
    folder = student(subs, "odd_names", [logged_run("logs/..run.log")])
    (folder / "logs" / "..run.log").write_text("97.175248")
    for name in ("new\nline.log", "ctl\x1b[31m\x07.log", "..hidden", "<b>x<\\b>.log"):
        (folder / "logs" / name).write_text("97.175248")
    (subs / "not_utf8").mkdir()
    (subs / "not_utf8" / "homework.ipynb").write_bytes(b'{"cells": [], "metadata": {"x": "\xff\xfe\xfa"}}')
    (subs / "too_big").mkdir()
    with open(str(subs / "too_big" / "homework.ipynb"), "wb") as f:  # sparse: 200 MB that cost nothing
        f.write(b'{"cells": [')
        f.truncate(200 << 20)
    (subs / "too_deep").mkdir()
    (subs / "too_deep" / "homework.ipynb").write_text('{"cells": [' + "[" * 10000 + "]" * 10000 + "]}")
    student(subs, "odd_values", [
        new_code_cell("import math\nimport labkit.results as R\n"
                      "for i, value in enumerate([float('nan'), math.inf, -math.inf]):\n"
                      "    r = R.Run('toy/converge', params={'steps': 10, 'rate': 0.3, 'log': 'logs/run.log'})\n"
                      "    r.add_metric('score', value, '%')\n    R.record(r, name='odd_%d' % i)\n"
                      "big = R.Run('toy/converge', params={'steps': 10, 'rate': 0.3, 'note': 'x' * (10 << 20)})\n"
                      "big.add_metric('score', 100.0, '%')\nR.record(big, name='y' * (10 << 20))")], "97.175248")
    student(subs, "html", [logged_run("logs/run.log", 99.0, name="<script>alert('record')</script>")], "97.175248",
            answer="<script>alert('answer')</script> " + N.GOOD_ANSWER)


@pytest.fixture(scope="module", params=CONFINING, ids=level_id)
def batch(request, tmp_path_factory, strongest_level):
    level = request.param
    if level == "bwrap":
        request.getfixturevalue("bubblewrap")
    if not levels.level_available(level):
        pytest.skip("isolation level {} does not work on this machine".format(level))
    root = tmp_path_factory.mktemp("threats-" + level)
    subs, out = root / "subs", root / "out"
    build(subs, grader_rows=(level == strongest_level))
    before = os.getcwd()
    if level == strongest_level:  # the instructor grades from inside SUBMISSIONS, beside a folder named labkit
        os.chdir(str(subs))
    try:
        results = grade_class(str(subs), RUBRIC, str(out), workers=2, limits=LIMITS, level=level)
    finally:
        os.chdir(before)
    return {"results": results, "out": out, "subs": subs, "level": level, "grader_rows": level == strongest_level}


def checks(batch, name: str) -> dict:
    return {c["name"]: c for c in batch["results"][name]["checks"]}


def all_outputs(batch) -> str:
    """Every file the grader wrote: what a student or the instructor could ever read."""
    texts = []
    for path in Path(str(batch["out"])).rglob("*"):
        if path.is_file():
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(texts)


def test_honest_submissions_get_every_point_beside_the_attacks(batch):
    for name in [n for n in ("honest_a", "honest_b", "path_fifo_handed_in") if n in batch["results"]]:
        result = batch["results"][name]
        assert result["status"] == "ok" and result["total"] == HONEST_TOTAL, (name, result["checks"])
        assert result["isolation"].startswith(batch["level"])


def test_launcher_row_and_kernel_start_import_nothing_from_the_submission(batch):
    result = batch["results"]["shadow_modules"]
    assert result["status"] == "ok" and checks(batch, "shadow_modules")["runs_clean"]["score"] == 1, result
    assert "SHADOWED" not in all_outputs(batch)


def test_recompute_row_a_shadowed_labkit_never_grades_itself(batch):
    for name in ("shadow_labkit", "shadow_tests", "shadow_modules"):
        got = checks(batch, name)
        assert got["score_default"]["score"] == 0, (name, got["score_default"])
        assert "recorded score = 100 but the grader recomputed 97.1752" in got["score_default"]["reason"], name
        assert batch["results"][name]["status"] == "ok", batch["results"][name]  # the student's own kernel ran
    assert "SHADOWED" not in all_outputs(batch)


def test_recompute_row_evidence_leaving_the_submission_is_refused_with_a_reason(batch):
    expected = {"path_parent": "leaves the submission's folder", "path_parent_run": "leaves the submission's folder",
                "path_absolute": "is an absolute path", "path_symlink": "a link that leads out",
                "path_passwd": "a link that leads out", "path_devzero": "a link that leads out",
                "path_fifo": "not a regular file"}
    for name, why in expected.items():
        got = checks(batch, name)
        for check in ("score_logged", "score_default"):  # a record naming a file outside counts nowhere
            assert got[check]["score"] == 0, (name, got[check])
            assert "refused: params['log']" in got[check]["reason"] and why in got[check]["reason"], \
                (name, got[check]["reason"])
    assert "root:x:0:0" not in all_outputs(batch)


def test_kernel_row_hidden_errors_fail_no_error_with_an_error_output(batch):
    names = [n for n in ("hide_instance", "hide_class", "hide_private", "hide_excepthook") if n in batch["results"]]
    assert names[0] == "hide_instance" and (len(names) == 4 or not batch["grader_rows"])
    for name in names:
        result = batch["results"][name]
        assert result["status"] == "error", (name, result["status"], result["reason"])
        assert "ZeroDivisionError" in result["error"], (name, result["error"])
        assert checks(batch, name)["runs_clean"]["score"] == 0
        assert checks(batch, name)["score_logged"]["score"] == 2  # what ran before still counts
        with open(os.path.join(str(batch["out"]), "executed", name + ".ipynb")) as f:
            executed = f.read()
        assert "traceback was shown" in executed or "no traceback" in executed, name


def test_kernel_row_a_kernel_dying_mid_cell_is_marked_in_that_cell(batch):
    result = batch["results"]["dies_mid_cell"]
    assert result["status"] == "kernel died" and checks(batch, "dies_mid_cell")["runs_clean"]["score"] == 0
    with open(os.path.join(str(batch["out"]), "executed", "dies_mid_cell.ipynb")) as f:
        cells = json.load(f)["cells"]
    dying = [c for c in cells if "os._exit" in "".join(c["source"])][0]
    assert [o["ename"] for o in dying["outputs"] if o["output_type"] == "error"] == ["DeadKernelError"]


def test_worker_row_grading_from_inside_the_submissions_folder_imports_no_student_package(batch):
    if not batch["grader_rows"]:
        pytest.skip("grader-side rows run at the strongest level only")
    result = batch["results"]["labkit"]
    assert result["status"] == "ok" and result["total"] == HONEST_TOTAL, result


def test_grader_row_file_names_with_dots_newlines_and_control_characters(batch):
    if not batch["grader_rows"]:
        pytest.skip("grader-side rows run at the strongest level only")
    result = batch["results"]["odd_names"]
    assert result["status"] == "ok" and result["total"] == HONEST_TOTAL, result["checks"]
    rows = read_gradebook(os.path.join(str(batch["out"]), "gradebook.csv"))
    assert sorted(r["student"] for r in rows) == sorted(batch["results"])  # one row each, none split
    summary = (Path(str(batch["out"])) / "summary.md").read_text()
    assert "\x1b" not in summary and "\x07" not in summary


def test_worker_row_notebooks_not_utf8_too_big_or_too_deep_are_unreadable(batch):
    if not batch["grader_rows"]:
        pytest.skip("grader-side rows run at the strongest level only")
    for name in ("not_utf8", "too_big", "too_deep"):
        result = batch["results"][name]
        assert result["status"] == "unreadable" and result["total"] == 0, (name, result)
    assert "over the {} byte limit".format(LIMITS.submission_bytes) in batch["results"]["too_big"]["reason"]
    assert "could not be read" in batch["results"]["too_deep"]["reason"]


def test_grader_row_record_values_nan_infinite_and_ten_megabytes(batch):
    if not batch["grader_rows"]:
        pytest.skip("grader-side rows run at the strongest level only")
    got = checks(batch, "odd_values")
    assert got["score_default"]["score"] == 0 and got["score_logged"]["score"] == 0
    state = Path(str(batch["out"])) / ".labkit-grade" / "state.json"
    assert state.stat().st_size < 4 << 20
    json.loads(state.read_text())  # still JSON, NaN or not
    assert all(len(c["reason"]) < 4000 for c in batch["results"]["odd_values"]["checks"])


def test_grader_row_html_in_answers_and_record_names_is_shown_as_text(batch):
    if not batch["grader_rows"]:
        pytest.skip("grader-side rows run at the strongest level only")
    got = checks(batch, "html")
    assert "<script>alert('record')</script>" in got["score_logged"]["reason"] or \
        "<script>alert('record')</script>" in got["score_default"]["reason"]
    page = (Path(str(batch["out"])) / "feedback" / "html.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(&#x27;record&#x27;)" in page
    summary = summary_markdown(class_summary([batch["results"]["html"]], ["score_default", "score_logged"]), 1)
    assert "<script>" not in summary and "&lt;script&gt;" in summary
    assert "<script>" not in (Path(str(batch["out"])) / "summary.md").read_text()
    assert "<script" not in (Path(str(batch["out"])) / "class.html").read_text()  # the class page: text too


@pytest.mark.parametrize("level", CONFINING, ids=level_id)
def test_rerun_row_trusted_processes_see_nothing_of_the_submission(tmp_path, level, strongest_level):
    """The recomputation (and the lab-book kernel a re-run starts from it) runs isolated, elsewhere."""
    from labkit.grading.recompute import run_sandboxed
    from labkit.grading.runner import launch_prefix

    if not levels.level_available(level):
        pytest.skip("isolation level {} does not work on this machine".format(level))
    root, scratch = tmp_path / "work", tmp_path / "recompute"
    scratch.mkdir()
    attacks.shadow_modules(student(tmp_path, "work", [logged_run("logs/run.log")], "97.175248"))
    kernels = root / ".local" / "share" / "jupyter" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({"argv": ["/bin/false"], "display_name": "x", "language": "python"}))
    prefix = launch_prefix(level, str(scratch), "", [], LIMITS, None, [], readonly=[str(root)])
    params = [{"log": "logs/run.log"}, {"log": "../recompute/secret.log"}]
    seen, refused = run_sandboxed("tests.grading.toy:environment", params, str(root), prefix, LIMITS, scratch=str(scratch))
    assert "leaves the submission" in refused["error"]
    seen = seen["ok"]
    inside = str(root.resolve())
    assert seen["flags_isolated"] == 1 and "" not in seen["path"]
    assert seen["log"] == "logs/run.log"  # read by absolute path, shown relative to the submission
    for key in ("cwd", "home", "ipython_dir", "kernel", "json"):  # (a path inside would be shown relative)
        assert os.path.isabs(seen[key]) and not seen[key].startswith(inside), (key, seen[key])
    entries = [p for p in seen["path"] if not p.endswith("__path_hook__")]  # an editable install's finder
    assert all(os.path.isabs(p) and not p.startswith(inside) for p in entries), seen["path"]
    assert seen["cwd"] == str(scratch.resolve())


def test_worker_row_trusted_python_starts_from_the_graders_own_labkit(tmp_path):
    """``python -I`` drops the current folder; what it puts back first is the folder holding the labkit
    this grader runs; the kernel's Landlock rules let it read that labkit and the lab book's notebooks beside
    it (a re-run reads them), wherever the module that computes these paths sits."""
    import labkit
    from labkit.grading.sandbox import trusted

    package = os.path.dirname(os.path.realpath(labkit.__file__))
    assert trusted.trusted_path()[0] == os.path.dirname(package)
    reads = levels.landlock_args(str(tmp_path), "")
    readable = [reads[i + 1] for i, arg in enumerate(reads) if arg == "--landlock-read"]
    assert package in readable and os.path.join(os.path.dirname(package), "notebooks") in readable


@pytest.mark.parametrize("level", CONFINING, ids=level_id)
def test_recompute_row_files_a_log_points_to_stay_inside_the_submission(tmp_path, level, strongest_level):
    """Whatever a file leads trusted code to open (a Slurm file's pointer), it opens nothing of another
    student's, of the grader's, and no device: an audit hook in the recomputation refuses it."""
    from labkit.grading.recompute import run_sandboxed
    from labkit.grading.runner import launch_prefix

    if not levels.level_available(level):
        pytest.skip("isolation level {} does not work on this machine".format(level))
    subs, scratch = tmp_path / "subs", tmp_path / "recompute"
    scratch.mkdir()
    root = student(subs, "mallory", [], "97.175248")
    ben = student(subs, "ben", [], "97.175248")
    prefix = launch_prefix(level, str(scratch), "", [], LIMITS, None, [], readonly=[str(root)])
    params = [{"points_to": str(root / "logs" / "run.log")}, {"points_to": str(ben / "logs" / "run.log")},
              {"points_to": "/dev/zero"}, {"points_to": str(scratch / ".." / "subs" / "ben" / "logs" / "run.log")}]
    own, other, device, climbing = run_sandboxed("tests.grading.toy:read_named", params, str(root), prefix, LIMITS,
                                                 scratch=str(scratch), exclude=[str(subs)])
    assert own == {"ok": {"score": 9.0}}
    for answer in (other, climbing):
        assert "PermissionError" in answer["error"] and "outside this submission" in answer["error"], answer
    assert "PermissionError" in device["error"] and "a FIFO or a device" in device["error"], device
