"""A submission's files stay inside its run folder at every level, or nothing runs.

At each level this machine offers as it is found (no package installed first: Landlock alone at
``unshare`` and ``rlimits``), then at ``bwrap`` once bubblewrap is installed, one batch grades two
honest notebooks beside one that writes to /tmp, /var/tmp, the grader's home and the submissions
folder, reads /etc/shadow, searches for and appends to a classmate's notebook and connects to a
listener on 127.0.0.1 (tests/grading/attacks.py): every attempt is blocked, nothing is left, and
the honest rows are the same at every level. The test ids name the level and how it was found.
Then: the fresh-machine default with bubblewrap hidden from PATH; ``labkit grade`` refusing, in
one sentence, where nothing confines files (Landlock switched off) unless ``--allow-unconfined``;
``--check``; and the grader run by an unprivileged user the test creates, with a venv under /tmp.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell

from labkit.grading.sandbox import levels
from labkit.grading.batch import grade_class
from labkit.grading.reports.gradebook import read_gradebook
from tests.grading import attacks
from tests.grading import notebooks as N
from tests.grading.conftest import ensure_bubblewrap
from tests.grading.test_hostile import LIMITS, RUBRIC, Listener

ROOT = str(Path(__file__).resolve().parents[2])
FOUND = [level for level in ("bwrap", "unshare", "rlimits") if levels.level_available(level)]
PARAMS = [pytest.param((level, "as-found"), id="{}-as-found".format(level)) for level in FOUND] + \
    [pytest.param(("bwrap", "installed"), id="bwrap-installed")]
HONEST = {}  # level id -> the honest rows' scores, compared across levels


def _class(root: Path, port: int, home: str):
    """SUBMISSIONS with two honest notebooks and the escaping one; returns (subs, marker, victim)."""
    subs = root / "subs"
    subs.mkdir(parents=True)
    N.write(N.homework(), subs / "honest_a.ipynb")
    N.write(N.homework(runs=[{"steps": 10, "rate": 0.3}, {"steps": 10, "rate": 0.1}]), subs / "honest_b.ipynb")
    marker = "labkit-escape-" + uuid.uuid4().hex[:8]
    victim = str(subs / "honest_a.ipynb")
    cell = attacks.escape_cell(marker, home, str(subs), victim, port)
    N.write(N.homework(extra=[new_code_cell(cell)]), subs / "escape.ipynb")
    return subs, marker, victim


def _escapes(executed: str) -> dict:
    """what -> 'blocked ...' or 'done ...', as the escape cell printed them."""
    import json

    with open(executed) as f:
        cells = json.load(f)["cells"]
    text = "".join("".join(o.get("text", "")) for c in cells for o in c.get("outputs", []) if o.get("name") == "stdout")
    found = {}
    for line in text.splitlines():
        if line.startswith("ESCAPE "):
            what, _, outcome = line[len("ESCAPE "):].partition(": ")
            found[what] = outcome
    return found


def _assert_contained(out: Path, subs: Path, marker: str, victim_bytes: bytes, home: str, hits: int) -> None:
    escapes = _escapes(str(out / "executed" / "escape.ipynb"))
    assert sorted(escapes) == sorted(attacks.ESCAPES), escapes
    assert all(o.startswith("blocked") for o in escapes.values()), escapes
    assert attacks.escape_leftovers(marker, home, str(subs)) == []
    assert (subs / "honest_a.ipynb").read_bytes() == victim_bytes
    assert hits == 0


@pytest.fixture(scope="module", params=PARAMS)
def level_batch(request, tmp_path_factory):
    level, how = request.param
    if how == "installed":
        if "bwrap" in FOUND:
            pytest.skip("bubblewrap was already installed: tested as found")
        why = ensure_bubblewrap()
        levels._PROBED.pop("bwrap", None)
        if why or not levels.level_available("bwrap"):
            pytest.skip("bubblewrap: {}".format(why or "installed but not permitted here"))
    root = tmp_path_factory.mktemp("confine-{}-{}".format(level, how))
    listener = Listener()
    home = os.path.expanduser("~")
    subs, marker, victim = _class(root, listener.port, home)
    before = Path(victim).read_bytes()
    try:
        results = grade_class(str(subs), RUBRIC, str(root / "out"), workers=2, limits=LIMITS, level=level)
    finally:
        listener.close()
    return {"level": level, "results": results, "out": root / "out", "subs": subs, "marker": marker, "before": before,
            "home": home, "hits": listener.hits}


def test_escape_is_contained_and_the_row_names_the_level(level_batch):
    b = level_batch
    _assert_contained(b["out"], b["subs"], b["marker"], b["before"], b["home"], b["hits"])
    isolation = b["results"]["escape"]["isolation"]
    assert isolation.startswith(b["level"]), isolation
    if levels.landlock_abi():
        assert "+landlock{}".format(levels.landlock_abi()) in isolation, isolation
    rows = read_gradebook(str(b["out"] / "gradebook.csv"))
    assert {r["isolation"] for r in rows} == {isolation}


def test_honest_rows_are_the_same_at_every_level(level_batch):
    results = level_batch["results"]
    rows = {name: (results[name]["status"], results[name]["total"],
                   [(c["name"], c["score"]) for c in results[name]["checks"]]) for name in ("honest_a", "honest_b")}
    assert rows["honest_a"][:2] == ("ok", 9.0), results["honest_a"]
    HONEST[level_batch["level"]] = rows
    assert all(other == rows for other in HONEST.values()), HONEST


def _labkit(args, env=None, user=None, timeout=300):
    cmd = [sys.executable, "-m", "labkit", "grade"] + list(args)
    return subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=ROOT, **(env or {})), cwd=ROOT, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _path_without_bwrap(tmp_path: Path) -> str:
    """A PATH holding what the grader runs (unshare), not bubblewrap: a fresh machine's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("unshare",):
        if shutil.which(tool):
            os.symlink(shutil.which(tool), str(bin_dir / tool))
    return str(bin_dir)


def test_bwrap_hidden_from_path_the_default_still_confines(tmp_path):
    listener = Listener()
    home = os.path.expanduser("~")
    try:
        subs, marker, victim = _class(tmp_path, listener.port, home)
        before = Path(victim).read_bytes()
        done = _labkit([str(subs), "--rubric", RUBRIC, "--out", str(tmp_path / "out"), "--workers", "2",
                        "--timeout", "25", "--cell-timeout", "8", "--memory", "1.5"],
                       env={"PATH": _path_without_bwrap(tmp_path)})
    finally:
        listener.close()
    assert done.returncode == 0, done.stderr
    _assert_contained(tmp_path / "out", subs, marker, before, home, listener.hits)
    rows = read_gradebook(str(tmp_path / "out" / "gradebook.csv"))
    isolation = {r["isolation"] for r in rows}
    assert len(isolation) == 1 and not next(iter(isolation)).startswith("bwrap"), isolation
    assert "landlock" in next(iter(isolation))


def test_without_bwrap_or_landlock_grade_refuses_in_one_sentence_unless_allowed(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    N.write(N.homework(), subs / "honest_a.ipynb")
    env = {"PATH": _path_without_bwrap(tmp_path), "LABKIT_LANDLOCK": "off"}
    args = [str(subs), "--rubric", RUBRIC, "--out", str(tmp_path / "out"), "--timeout", "25", "--memory", "1.5"]
    refused = _labkit(args, env=env)
    assert refused.returncode == 2
    message = refused.stderr.strip()
    assert len(message.splitlines()) == 1 and message.count(". ") == 0, message
    for words in ("bubblewrap", "Landlock", "other students' submissions", "apt-get install bubblewrap",
                  "--allow-unconfined"):
        assert words in message, message
    assert not (tmp_path / "out" / "executed" / "honest_a.ipynb").exists()
    check = _labkit(["--check"], env=env)
    assert check.returncode == 0 and "would refuse" in check.stdout and "Landlock: not available" in check.stdout

    allowed = _labkit(args + ["--allow-unconfined"], env=env)
    assert allowed.returncode == 0, allowed.stderr
    rows = read_gradebook(str(tmp_path / "out" / "gradebook.csv"))
    assert rows[0]["isolation"].startswith("unconfined") and rows[0]["total"] == "9", rows
    none = _labkit([str(subs), "--rubric", RUBRIC, "--out", str(tmp_path / "out_none"), "--isolation", "none",
                    "--timeout", "25", "--memory", "1.5"])
    assert none.returncode == 0, none.stderr
    assert read_gradebook(str(tmp_path / "out_none" / "gradebook.csv"))[0]["isolation"].startswith("unconfined")


def test_check_lists_every_level_and_the_one_grading_would_use():
    done = _labkit(["--check"])
    assert done.returncode == 0, done.stderr
    for level in levels.LEVELS:
        assert "\n" + level + " " in done.stdout, done.stdout
    best = levels.best_level()
    assert "would use: {} (gradebook: {}".format(best, best) in done.stdout, done.stdout
    if levels.landlock_abi():
        assert "Landlock ABI {}".format(levels.landlock_abi()) in done.stdout


# --- the grader run by an unprivileged user -------------------------------------------------

USER = "labkit-grade-test"


def _python_for_others() -> str:
    """An interpreter of this Python's version that other users can run (not one under /root)."""
    version = "python{}.{}".format(*sys.version_info[:2])
    for folder in ("/usr/bin", "/usr/local/bin", "/opt/conda/bin"):
        candidate = os.path.join(folder, version)
        if os.path.isfile(candidate) and os.stat(candidate).st_mode & 0o001:
            return candidate
    return ""


def test_an_unprivileged_instructor_is_confined_too(tmp_path):
    if os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser"):
        pytest.skip("needs root, useradd and runuser to create the unprivileged instructor")
    python = _python_for_others()
    packages = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    if not python:
        pytest.skip("no python{}.{} outside /root that another user may run".format(*sys.version_info[:2]))
    if not all(os.access(p, os.R_OK) and _others_reach(p) for p in packages + [ROOT]):
        pytest.skip("labkit's packages ({}) are not readable by other users".format(", ".join(packages)))
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", USER], check=True)
    user = pwd.getpwnam(USER)
    # Everything the user owns lives under /tmp: a venv (the system Python, with this venv's
    # packages through a .pth file), a home, the class and the grades.
    top = Path(tempfile.gettempdir()) / "labkit-user-{}".format(uuid.uuid4().hex[:8])
    top.mkdir(mode=0o755)
    try:
        venv = top / "venv"
        subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
        site = subprocess.run([str(venv / "bin" / "python"), "-c",
                               "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
        Path(site, "labkit_shared.pth").write_text("\n".join(sorted(set(packages))) + "\n")
        home = top / "home"
        home.mkdir()
        listener = Listener()
        try:
            subs, marker, victim = _class(top / "class", listener.port, str(home))
            before = Path(victim).read_bytes()
            subprocess.run(["chown", "-R", "{}:{}".format(user.pw_uid, user.pw_gid), str(home), str(top / "class")],
                           check=True)
            env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": ROOT, "LANG": "C.UTF-8"}
            if os.environ.get("LABKIT_DATA_DIR"):
                env["LABKIT_DATA_DIR"] = os.environ["LABKIT_DATA_DIR"]
            out = top / "class" / "out"
            env_args = ["{}={}".format(k, v) for k, v in env.items()]
            grade = [str(venv / "bin" / "python"), "-m", "labkit", "grade", str(subs), "--rubric", RUBRIC,
                     "--out", str(out), "--workers", "2", "--timeout", "25", "--cell-timeout", "8", "--memory", "1.5"]
            done = subprocess.run(["runuser", "-u", USER, "--", "env", "-i"] + env_args + grade, cwd=str(home),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=400)
        finally:
            listener.close()
        assert done.returncode == 0, (done.stdout, done.stderr)
        _assert_contained(out, subs, marker, before, str(home), listener.hits)
        rows = {r["student"]: r for r in read_gradebook(str(out / "gradebook.csv"))}
        assert rows["honest_a"]["total"] == "9" and rows["honest_a"]["status"] == "ok", rows["honest_a"]
        expected = "rlimits" + ("+landlock{}".format(levels.landlock_abi()) if levels.landlock_abi() else "")
        if not levels.level_available("bwrap"):  # bubblewrap needs unprivileged user namespaces for this user
            assert rows["escape"]["isolation"].startswith(expected), rows["escape"]
    finally:
        shutil.rmtree(str(top), ignore_errors=True)


def _others_reach(path: str) -> bool:
    """Whether every folder on the way to ``path`` lets other users pass."""
    path = os.path.realpath(path)
    while path != os.sep:
        if not os.stat(path).st_mode & 0o001:
            return False
        path = os.path.dirname(path)
    return True
