"""labkit's GroqFlow path against the REAL GroqFlow 4.3.1 and against the fake, for what runs
without a GroqChip: the chip count with and without lspci, and ``groqit`` up to its SDK check.

Every test runs twice, on ``fake`` (tests/fakes/groqflow, always) and on ``real`` (the PyPI
package, only in a Python where it is installed: ``make test-vendors`` builds that virtual
environment and runs this file there). One body for both: the fake must agree with the real
package on everything asserted here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes import GROQFLOW
from tests.fakes.groqnode import lspci_text, no_lspci
from tests.groq.conftest import embedding_classifier

# GroqFlow's stack (torch 2.1, scikit-learn 1.1.1, pkg_resources) warns at import and while it
# exports; GroqFlow sends those into its stage logs. They are not labkit's to fix.
pytestmark = pytest.mark.filterwarnings("ignore")

REAL_VERSION = "4.3.1"
UNSUPPORTED_OS = ("Your OS must be one of the following Linux distributions: Ubuntu, Rocky Linux. Please refer "
                  "to our installation guide for more details on supported versions.")
NO_DEVTOOLS = ("groq-devtools>=0.9.2.1 is a required dependency for this part of GroqFlow. However, groq-devtools "
               "was not found. Please contact sales@groq.com to get access to groq-devtools.")


def _purge():
    for name in [m for m in sys.modules if m.split(".")[0] in ("groqflow", "onnxflow")]:
        del sys.modules[name]


@pytest.fixture(params=["fake", "real"])
def groqflow(request, monkeypatch, tmp_path):
    """``import groqflow`` as the fake or the real package; yields which."""
    monkeypatch.setenv("GROQFLOW_CACHE_DIR", str(tmp_path / "groqflow-cache"))
    _purge()
    if request.param == "fake":
        monkeypatch.syspath_prepend(str(GROQFLOW))
        # the fake reads the os-release file it is given; the real one reads /etc/os-release
        monkeypatch.setenv("FAKE_GROQFLOW_OS_RELEASE", "/etc/os-release")
    else:
        monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p).resolve() != GROQFLOW])
        try:
            import groqflow as real
        except ImportError as exc:
            pytest.skip("the real GroqFlow {} is not installed in this Python ({}); `make test-vendors` runs these "
                        "tests where it is".format(REAL_VERSION, exc))
        if real.__version__ != REAL_VERSION:
            pytest.skip("groqflow {} is installed here, not {}".format(real.__version__, REAL_VERSION))
    yield request.param
    _purge()


def _os_name() -> str:
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("NAME="):
            return line.split("=", 1)[1].strip('"')
    return ""


def _tiny_model():
    return embedding_classifier(100, 8)


def test_without_lspci_groqflow_raises_an_envError_that_labkit_turns_into_one_sentence(groqflow, monkeypatch,
                                                                                       tmp_path, capfd):
    if groqflow == "real" and os.path.isfile("/usr/bin/lspci"):
        pytest.skip("/usr/bin/lspci exists: GroqFlow falls back to it whatever PATH says")
    for name, value in no_lspci(tmp_path).items():
        monkeypatch.setenv(name, value)
    from groqflow.common import sdk_helpers
    import onnxflow.common.exceptions as exp

    with pytest.raises(exp.EnvError) as raised:
        sdk_helpers.get_num_chips_available()
    # the message is printed, with the fail whale, and not kept in the exception
    assert str(raised.value) == "" and raised.value.args == ()
    assert "lspci not found" in capfd.readouterr().err

    from labkit.testbeds.groq import backends

    chips, reason = backends.groq_chips()
    assert chips == 0
    assert reason == ("GroqFlow counts GroqChips with lspci, which this machine does not have "
                      "(GroqFlow said: lspci not found; lspci comes with pciutils)")
    assert capfd.readouterr().err == ""  # no whale on the student's screen


def test_groqflow_counts_one_chip_per_groqcard_in_lspci(groqflow, monkeypatch, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "lspci.txt").write_text(lspci_text(2))
    (bin_dir / "lspci").write_text("#!/bin/sh\ncat '{}'\n".format(tmp_path / "lspci.txt"))
    (bin_dir / "lspci").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ["PATH"])
    from labkit.testbeds.groq import backends

    assert backends.groq_chips() == (2, "2 GroqChip(s) found")
    from groqflow.common import sdk_helpers

    assert sdk_helpers.get_num_chips_available(["3b:00.0 1200: 1de0:0000", "00:00.0 0600: 8086:2020"]) == 1


def test_groqflows_rule_for_the_number_of_chips(groqflow):
    from groqflow.common import build

    counts = [0, 1, 50000000, 50000001, 100000000, 100000001, 150000001, 200000001, 400000001]
    assert [build.calculate_num_chips(n) for n in counts] == [1, 1, 1, 2, 2, 4, 4, 8, 16]
    assert build.max_chips(build.GROQCARD_A14, build.DRAGONFLY) == 64


def test_groqit_without_the_sdk_exports_optimizes_and_stops_at_its_dependency_check(groqflow, tmp_path):
    """Without the GroqWare SDK groqit exports the model, optimizes the ONNX file, then stops at
    check_compatibility; labkit says so in one line and gets its stdout back."""
    if _os_name() in ("Ubuntu", "Rocky Linux"):
        pytest.skip("this test is for an OS GroqFlow does not support; the Ubuntu case is the next test")
    from labkit.testbeds.groq.backends import BackendError, GroqEngine

    model, dummy = _tiny_model()
    stdout = sys.stdout
    with pytest.raises(BackendError) as raised:
        GroqEngine(model, "classification", dummy, label="probe")
    assert str(raised.value) == ("groq: groqit() could not build labkit_probe: GroqFlow raised EnvError: "
                                 + UNSUPPORTED_OS)
    assert sys.stdout is stdout
    build_dir = Path(os.environ["GROQFLOW_CACHE_DIR"]) / "labkit_probe"
    assert sorted(p.name for p in (build_dir / "onnx").iterdir()) == ["labkit_probe-op16-base.onnx",
                                                                      "labkit_probe-op16-opt.onnx"]
    assert "Success exporting model to ONNX" in (build_dir / "log_export_pytorch.txt").read_text()
    assert "Success optimizing ONNX model" in (build_dir / "log_optimize_onnx.txt").read_text()
    assert (build_dir / "log_check_compatibility.txt").read_text() == ""
    assert not (build_dir / "log_fp16_conversion.txt").exists()


def test_groqit_leaves_stdout_in_the_stage_log_after_an_envError(groqflow, tmp_path, capfd):
    """GroqFlow itself (not labkit): the stage that raised EnvError keeps sys.stdout, and the
    failed build is in the cache for the next call."""
    if _os_name() in ("Ubuntu", "Rocky Linux"):
        pytest.skip("on a supported OS the dependency check raises a StageError, which restores stdout")
    from groqflow import groqit
    import onnxflow.common.exceptions as exp

    model, dummy = _tiny_model()
    stdout = sys.stdout
    try:
        with pytest.raises(exp.EnvError):
            groqit(model, dummy, build_name="leak", monitor=False)
        left = sys.stdout
    finally:
        sys.stdout = stdout
    assert left is not stdout and type(left).__name__ == "Logger"
    assert UNSUPPORTED_OS in capfd.readouterr().err
    # the next call finds that failed build in the cache, says so and builds again
    try:
        with pytest.raises(exp.EnvError):
            groqit(model, dummy, build_name="leak", monitor=False)
    finally:
        sys.stdout = stdout
    assert ("build_model() has detected that you already attempted building this model with the exact same model, "
            "inputs, options, and version of onnxflow, and that build failed.") in capfd.readouterr().out


UBUNTU = 'PRETTY_NAME="Ubuntu 22.04.3 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\n'

PROBE = """
import sys
from labkit.testbeds.groq.backends import BackendError, GroqEngine
from tests.groq.test_groqflow_real import _tiny_model
model, dummy = _tiny_model()
try:
    GroqEngine(model, "classification", dummy, label="probe")
except BackendError as error:
    print("BackendError:", error)
"""


def test_groqit_on_ubuntu_without_groq_devtools_stops_with_a_stageError(groqflow, tmp_path):
    """On Ubuntu the check asks apt-cache for groq-devtools; without it, a StageError (the real
    package reads /etc/os-release, so it runs in a mount namespace where that file says Ubuntu)."""
    (tmp_path / "os-release").write_text(UBUNTU)
    empty = tmp_path / "apt"
    empty.mkdir()
    # apt-cache policy of a package apt does not know prints nothing
    (empty / "apt-cache").write_text("#!/bin/sh\nexit 0\n")
    (empty / "apt-cache").chmod(0o755)
    env = dict(os.environ, PATH=str(empty) + os.pathsep + os.environ["PATH"],
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    if groqflow == "fake":
        env["FAKE_GROQFLOW_OS_RELEASE"] = str(tmp_path / "os-release")
        command = [sys.executable, "-c", PROBE]
    else:
        script = "mount --bind {} /etc/os-release && exec {} -c \"$0\"".format(tmp_path / "os-release", sys.executable)
        command = ["unshare", "-m", "sh", "-c", script, PROBE]
        if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
            pytest.skip("unshare -m is not allowed here (it needs root): the real /etc/os-release cannot be replaced")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300,
                          cwd=str(Path(__file__).resolve().parents[2]))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == (
        "BackendError: groq: groqit() could not build labkit_probe: GroqFlow raised StageError: " + NO_DEVTOOLS)
