"""Hostile submissions: each is contained and graded with a reason; the others grade correctly.

All of them are graded in ONE batch (2 workers, tight limits) next to two honest submissions,
which is the point: a hostile notebook must not spoil its neighbours' grades.
"""

from __future__ import annotations

import json
import os
import socket
import threading

import pytest
from nbformat.v4 import new_code_cell

from labkit.grading.sandbox import levels, slots
from labkit.grading.batch import grade_class
from labkit.grading.reports.gradebook import read_gradebook
from tests.grading import notebooks as N

# Wall-clock limits (25 s a notebook, 8 s a cell) decide these outcomes: the memory bomb's grade
# ended in "timeout" once when another test shared the cores (make test runs timing tests alone).
pytestmark = pytest.mark.timing

HERE = os.path.dirname(os.path.abspath(__file__))
RUBRIC = os.path.join(HERE, "rubric_toy.yml")
LIMITS = levels.Limits(notebook_s=25, cell_s=8, memory_bytes=1536 << 20, nproc=64, fsize_bytes=16 << 20,
                        output_bytes=1 << 20)
SECRET = "grader-secret-4b1d"


def code(text: str) -> object:
    return new_code_cell(text)


def hostile_notebooks(subs: str, out: str, port: int) -> dict:
    """student -> notebook; each hostile cell comes after the honest runs (so partial credit shows)."""
    return {
        "honest_a": N.homework(),
        "honest_b": N.homework(runs=[{"steps": 10, "rate": 0.3}, {"steps": 10, "rate": 0.6}, {"steps": 10, "rate": 0.1}]),
        "loop_forever": N.homework(extra=[code("while True:\n    pass")]),
        "memory_bomb": N.homework(extra=[code("hog = []\nwhile True:\n    hog.append(bytearray(64 << 20))")]),
        "fork_bomb": N.homework(extra=[code(
            "import os, time\nwhile True:\n    if os.fork() == 0:\n        time.sleep(300)\n        os._exit(0)")]),
        "huge_file": N.homework(extra=[code(
            "with open('big.bin', 'wb') as f:\n    while True:\n        f.write(b'0' * (1 << 20))")]),
        "sys_exit": N.homework(extra=[code("import sys\nsys.exit(3)")]),
        "os_exit": N.homework(extra=[code("import os\nos._exit(0)")]),
        "crash_kernel": N.homework(extra=[code("import ctypes\nctypes.string_at(0)")]),
        "print_gigabyte": N.homework(extra=[code(
            "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)")]),
        "read_sibling": N.homework(extra=[code(
            "import os\nprint('SIBLINGS', os.listdir({subs!r}))\nprint('STOLEN', open(os.path.join({subs!r}, 'honest_a.ipynb')).read()[:80])".format(subs=subs))]),
        "gradebook_writer": N.homework(extra=[code(
            "open({p!r}, 'a').write('gradebook_writer,9,9,9,9,9,9,54,10,ok,none,\\n')".format(p=os.path.join(out, "gradebook.csv")))]),
        "gradebook_overwriter": N.homework(extra=[code(
            "import os\nos.replace('x', {p!r}) if os.path.exists('x') else open({p!r}, 'w').write('student\\n')".format(
                p=os.path.join(out, "gradebook.csv")))]),
        "network": N.homework(extra=[code(
            "import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=3)\ns.sendall(b'exfiltrated')".format(port=port))]),
        "environment": N.homework(extra=[code("import os\nprint('SECRET=' + str(os.environ.get('LABKIT_GRADER_SECRET')))")]),
        "monkeypatch": N.homework(runs=[], before=[code(
            "import labkit.results\nfrom tests.grading import toy\n"
            "toy._score = lambda steps, rate: 100.0   # a perfect score, no work\n"
            "labkit.results.record(toy.run(10, 0.3), name='run_0')\nlabkit.results.record(toy.run(10, 0.6), name='run_1')")]),
        "fake_outputs": _fake_outputs(),
    }


def _fake_outputs() -> object:
    """Real code that records nothing useful, with outputs edited to show perfect records."""
    nb = N.homework(runs=[], before=[code("pass  # the run cell was deleted"), code("pass")])
    nb.cells[1].outputs = [N.fake_record_output("run_0", 99.9)]
    nb.cells[2].outputs = [N.fake_record_output("run_1", 100.0, rate=0.6)]
    return nb


class Listener:
    """A TCP listener on 127.0.0.1 that counts connections (a sandboxed kernel must make none)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.hits += 1
            conn.close()

    def close(self) -> None:
        self.stop = True
        self.thread.join(2)
        self.sock.close()


@pytest.fixture(scope="module")
def batch(tmp_path_factory, strongest_level):
    root = tmp_path_factory.mktemp("hostile")
    subs, out = str(root / "subs"), str(root / "out")
    os.makedirs(subs)
    listener = Listener()
    for student, nb in hostile_notebooks(subs, out, listener.port).items():
        N.write(nb, os.path.join(subs, student + ".ipynb"))
    os.environ["LABKIT_GRADER_SECRET"] = SECRET
    try:
        results = grade_class(subs, RUBRIC, out, workers=2, limits=LIMITS, reproduce=True)
    finally:
        os.environ.pop("LABKIT_GRADER_SECRET", None)
        listener.close()
    return {"results": results, "out": out, "subs": subs, "hits": listener.hits, "level": strongest_level}


def executed_text(batch, student: str) -> str:
    with open(os.path.join(batch["out"], "executed", student + ".ipynb")) as f:
        return f.read()


def check(batch, student: str, name: str) -> dict:
    return {c["name"]: c for c in batch["results"][student]["checks"]}[name]


def test_every_submission_is_graded_once_and_honest_ones_fully(batch):
    rows = read_gradebook(os.path.join(batch["out"], "gradebook.csv"))
    students = [r["student"] for r in rows]
    assert sorted(students) == sorted(hostile_notebooks("", "", 1)) and len(students) == len(set(students))
    by = {r["student"]: r for r in rows}
    # honest submissions: everything but reproduce (handed in without outputs) and nothing lost to neighbours
    for student in ("honest_a", "honest_b"):
        assert by[student]["status"] == "ok", by[student]
        assert float(by[student]["total"]) == 9.0, batch["results"][student]["checks"]
        assert by[student]["isolation"].startswith(batch["level"])


def test_infinite_loop_is_stopped_by_the_cell_limit(batch):
    result = batch["results"]["loop_forever"]
    assert result["status"] == "timeout" and "per-cell time limit" in result["reason"]
    assert check(batch, "loop_forever", "score_default")["score"] == 2  # runs before the loop still count
    assert check(batch, "loop_forever", "runs_clean")["score"] == 0


def test_unbounded_memory_ends_in_memory_error(batch):
    result = batch["results"]["memory_bomb"]
    assert result["status"] in ("error", "kernel died"), result
    assert "MemoryError" in (result["error"] or "") or result["status"] == "kernel died"
    assert check(batch, "memory_bomb", "runs_clean")["score"] == 0


def test_fork_bomb_hits_the_process_limit_and_leaves_nothing_behind(batch):
    result = batch["results"]["fork_bomb"]
    assert result["status"] in ("error", "kernel died", "timeout"), result
    if result["status"] == "error":
        assert "BlockingIOError" in result["error"] or "Resource temporarily unavailable" in result["error"]
    assert batch_leftovers() == []


def batch_leftovers() -> list:
    """Processes of the sandbox uids started by this test process's batches (their command line names
    its working folder: another grader on the same machine may be using the same uids)."""
    low, _high = slots.UID_RANGE
    marker = "labkit-grade-{}-".format(os.getpid()).encode()
    found = []
    for pid in [pid for uid in range(low, low + 8) for pid in slots.pids_of_uid(uid)]:
        try:
            with open("/proc/{}/cmdline".format(pid), "rb") as f:
                if marker in f.read():
                    found.append(pid)
        except OSError:  # gone meanwhile
            continue
    return found


def test_huge_file_stops_at_the_file_size_limit(batch):
    result = batch["results"]["huge_file"]
    assert result["status"] == "error" and "File too large" in result["error"], result


def test_sys_exit_is_an_error_and_os_exit_kills_only_its_kernel(batch):
    assert batch["results"]["sys_exit"]["status"] == "error"
    assert "SystemExit" in batch["results"]["sys_exit"]["error"]
    for student in ("os_exit", "crash_kernel"):
        result = batch["results"][student]
        assert result["status"] == "kernel died", result
        assert check(batch, student, "score_default")["score"] == 2  # recorded before the crash
        assert check(batch, student, "runs_clean")["score"] == 0


def test_a_gigabyte_of_output_is_not_kept(batch):
    size = os.path.getsize(os.path.join(batch["out"], "executed", "print_gigabyte.ipynb"))
    assert size < 4 * LIMITS.output_bytes
    result = batch["results"]["print_gigabyte"]
    assert check(batch, "print_gigabyte", "score_default")["score"] == 2


def test_sibling_submissions_are_invisible(batch):
    assert levels.protects_files(batch["level"])  # bubblewrap or Landlock: the grader refuses otherwise
    text = executed_text(batch, "read_sibling")
    assert "honest_b.ipynb" not in text and "Toy homework" not in text.split("STOLEN")[-1]
    assert batch["results"]["read_sibling"]["status"] == "error"


def test_gradebook_cannot_be_written_from_a_notebook(batch):
    rows = read_gradebook(os.path.join(batch["out"], "gradebook.csv"))
    assert [r for r in rows if r["student"] == "gradebook_writer"][0]["total"] != "54"
    for student in ("gradebook_writer", "gradebook_overwriter"):
        assert batch["results"][student]["status"] == "error", batch["results"][student]
    assert len(rows) == len(hostile_notebooks("", "", 1))


def test_no_network_connection_leaves_the_sandbox(batch):
    if batch["level"] == "rlimits" and levels.landlock_abi() < 4:
        pytest.skip("at rlimits only Landlock ABI 4+ denies TCP; this kernel has ABI {}".format(levels.landlock_abi()))
    assert batch["hits"] == 0
    result = batch["results"]["network"]
    assert result["status"] == "error" and any(why in result["error"] for why in (
        "Network is unreachable", "refused", "Permission denied")), result["error"]


def test_grader_environment_is_scrubbed(batch):
    assert SECRET not in executed_text(batch, "environment")
    assert "SECRET=None" in executed_text(batch, "environment")


def test_monkeypatched_perfect_score_fails_recomputation(batch):
    score = check(batch, "monkeypatch", "score_default")
    assert score["score"] == 0
    assert "recomputed 97.1752" in score["reason"] and "score = 100" in score["reason"]


def test_prefilled_fake_records_never_count(batch):
    assert check(batch, "fake_outputs", "score_default")["score"] == 0
    assert check(batch, "fake_outputs", "rates_tried")["score"] == 0
    reproduce = check(batch, "fake_outputs", "reproduces")
    assert reproduce["score"] == 0 and "was not produced again" in reproduce["reason"]


def test_feedback_withholds_hidden_details(batch):
    with open(os.path.join(batch["out"], "feedback", "honest_a.html")) as f:
        html = f.read()
    assert "secret_check" in html and "details are withheld" in html
    assert "hidden detail" not in html and ">= 99" not in html
    with open(os.path.join(batch["out"], ".labkit-grade", "state.json")) as f:
        state = json.load(f)
    assert set(state["results"]) == set(hostile_notebooks("", "", 1))
