"""The Groq exercise's vendor path: GroqFlow on a GroqChip, driven as the proof point drives it:
``groqit`` builds, ``run_abunch`` predicts, ``benchmark()`` and ``estimate_performance()`` time.

GroqFlow 4.3.1's errors (mlagility's ``onnxflow.common.exceptions.Error`` and its subclasses)
carry no message: ``Error.__init__`` prints it on stderr, with an ASCII whale, and calls
``Exception.__init__()`` with nothing. Every GroqFlow call here therefore keeps stderr, and a
failure becomes a :class:`BackendError` whose one line is what GroqFlow printed. A stage of
``groqit`` that fails with anything but its ``StageError`` leaves ``sys.stdout`` writing into
that stage's log file (``onnxflow/justbuildit/stage.py``, ``fire_helper``); it is put back.

Checked against the real GroqFlow 4.3.1 where it runs without a GroqChip (the chip count with
and without lspci, ``groqit`` up to its SDK check: tests/groq/test_groqflow_real.py); the
build, the runs and the figures against the fake (tests/fakes/groqflow) only.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from labkit.testbeds.groq.engine import BackendError, BuildInfo, Engine

__all__ = ["groq_chips", "GroqEngine"]

#: GroqFlow's rule for the chips of a build (groqflow/common/build.py, calculate_num_chips).
PARAMETERS_PER_CHIP = 50000000


def _printed_error(text: str) -> str:
    """The message of GroqFlow's ``log_error`` in what it printed: after "Error:", before the whale."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    if "Error:" not in text:
        return " ".join(text.split())
    message = text.split("Error:", 1)[1].split("\u2584", 1)[0].split("\u2588", 1)[0]
    return " ".join(message.replace("**", "").split())


@contextlib.contextmanager
def _groqflow(doing: str) -> Iterator[None]:
    """Run a GroqFlow call: its failure becomes one BackendError line saying what GroqFlow said."""
    import onnxflow.common.exceptions as exp

    stdout, printed, said = sys.stdout, io.StringIO(), None
    try:
        with contextlib.redirect_stderr(printed):
            yield
    except (exp.Error, exp.StageError) as error:
        said = "{}: {}".format(type(error).__name__, _printed_error(printed.getvalue()) or error)
    finally:
        sys.stdout = stdout
        if said is None:  # anything else GroqFlow printed stays on the screen
            sys.stderr.write(printed.getvalue())
    if said is not None:
        raise BackendError("groq: {}: GroqFlow raised {}".format(doing, said))


def groq_chips() -> Tuple[int, str]:
    """(number of GroqChips, reason) using GroqFlow's own count (lspci vendor id 1de0)."""
    from labkit.devices import module_available

    if not module_available("groqflow"):
        return 0, "groqflow is not installed (it comes with the GroqWare SDK on a GroqNode)"
    from groqflow.common import sdk_helpers
    import onnxflow.common.exceptions as exp

    printed = io.StringIO()
    try:
        with contextlib.redirect_stderr(printed):
            chips = int(sdk_helpers.get_num_chips_available())
    except exp.EnvError:  # GroqFlow 4.3.1 raises it only for "lspci not found"
        return 0, ("GroqFlow counts GroqChips with lspci, which this machine does not have "
                   "(GroqFlow said: {}; lspci comes with pciutils)".format(_printed_error(printed.getvalue())))
    return chips, "{} GroqChip(s) found".format(chips) if chips else "groqflow is installed but no GroqChip was found"


class GroqEngine(Engine):
    """GroqFlow on a GroqChip, as the proof point drives it; ``chips``: the GroqChips of the build."""

    name = "groq"

    def __init__(self, model: Any, task: str, dummy: Dict[str, Any], label: str = "model"):
        from groqflow import groqit

        self.task = task
        slug = "".join(c if c.isalnum() else "_" for c in label.split("/")[-1])[:40]
        start = time.perf_counter()
        build_name = "labkit_" + slug
        # One build name per model: when the input shape changes, GroqFlow itself sees it and
        # rebuilds ("Input shape of model ... changed"), which is the lesson of the homework.
        with _groqflow("groqit() could not build " + build_name):
            self.gmodel = groqit(model, dummy, build_name=build_name)
        self.chips = int(self.gmodel.state.num_chips_used)
        if self.chips > 1:
            parameters = getattr(self.gmodel.state.info, "num_parameters", None)
            size = "{:.1f}M parameters".format(parameters / 1e6) if parameters else "its parameters"
            said = ("groqit() built {} for {} GroqChips: GroqFlow gives each chip at most {}M parameters and "
                    "uses a power of 2 chips, and the model has {}.".format(build_name, self.chips,
                                                                           PARAMETERS_PER_CHIP // 1000000, size))
            available, reason = groq_chips()
            if self.chips > available:
                # GroqModel would raise ModelRuntimeError at its first run; say it before anything runs
                raise BackendError("groq: {} This node has {} ({}), so the model cannot run here.".format(
                    said, available, reason))
            print("groq: " + said)
        shape = tuple(dummy["input_ids"].shape)
        self.build = BuildInfo(self.name, " x ".join(str(s) for s in shape) + " (fixed)",
                               "GroqFlow build labkit_{} (see ~/.cache/groqflow)".format(slug), True,
                               time.perf_counter() - start)

    def _tensor(self, output: Any) -> Any:
        import numpy as np
        import torch

        if isinstance(output, tuple):  # several model outputs: the first is logits / last_hidden_state
            output = output[0]
        return torch.as_tensor(np.asarray(output)).float()

    def __call__(self, inputs: Dict[str, Any]) -> Any:
        with _groqflow("GroqModel.run"):
            return self._tensor(self.gmodel.run(inputs))

    def run_dataset(self, batches: Sequence[Dict[str, Any]], desc: str = "",
                    on_last: Optional[Callable[[], None]] = None) -> Tuple[List[Any], float]:
        print("Running inference on GroqChip ({} inputs in one run_abunch call).".format(len(batches)))
        start = time.perf_counter()
        with _groqflow("GroqModel.run_abunch"):
            results = self.gmodel.run_abunch(list(batches))
        seconds = time.perf_counter() - start
        if on_last is not None:
            on_last()
        if len(batches) == 1:  # run_abunch returns a single result for a single input
            results = [results]
        return [self._tensor(r) for r in results], seconds

    def benchmark(self, inputs: Dict[str, Any], repetitions: int = 100, budget_s: float = 10.0) -> float:
        """GroqFlow's benchmark(): the compile-time inputs, run on the chip; seconds."""
        with _groqflow("GroqModel.benchmark"):
            # for a build on several chips GroqFlow's estimate is already the whole pipeline's
            self.on_chip_latency_s = float(self.gmodel.estimate_performance().compute_latency)
            return float(self.gmodel.benchmark().latency)
