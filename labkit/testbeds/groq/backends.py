"""The Groq exercise's inference backends: which exist, which run here (:func:`resolve_backends`),
and one ready engine of each (:func:`make`). An :class:`Engine` runs one model at one input shape and
says what building it did (:class:`BuildInfo`): PyTorch eager on the CPU or a CUDA GPU
(:class:`TorchEngine`), ONNX Runtime (:class:`OnnxEngine`), GroqFlow on a GroqChip (:class:`GroqEngine`).
Every engine returns the logits (classification) or the last hidden state (similarity) as a CPU float
tensor, so predictions compare one to one.

ONNX Runtime runs the model exported with ``torch.onnx.export`` at a FIXED shape (batch,
max_seq_length), like GroqFlow's own first build stage. Exports are cached by model contents and
shape: a new shape means a new export, as it means a new GroqChip program.

GroqFlow is driven as the proof point drives it: ``groqit`` builds, ``run_abunch`` predicts,
``benchmark()`` and ``estimate_performance()`` time. GroqFlow 4.3.1's errors (mlagility's
``onnxflow.common.exceptions.Error`` and its subclasses) carry no message: ``Error.__init__`` prints
it on stderr, with an ASCII whale, and calls ``Exception.__init__()`` with nothing. Every GroqFlow
call here therefore keeps stderr, and a failure becomes a :class:`BackendError` whose one line is
what GroqFlow printed. A stage of ``groqit`` that fails with anything but its ``StageError`` leaves
``sys.stdout`` writing into that stage's log file (``onnxflow/justbuildit/stage.py``,
``fire_helper``), and a run that fails on the chips leaves ``sys.stderr`` writing into the build's
``log_execute.txt``, its error message included (``groqmodel.py``, ``_execute_locally``): both are
put back, and the message is read from that log.

Checked against the real GroqFlow 4.3.1 where it runs without a GroqChip (the chip count with
and without lspci, ``groqit`` up to its SDK check: tests/groq/test_groqflow_real.py); the
build, the runs and the figures against the fake (tests/fakes/groqflow) only.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import io
import re
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from labkit.errors import LabkitError
from labkit.files import produce_atomic

__all__ = ["BACKENDS", "available", "parse_backends", "resolve_backends", "make", "BackendError", "BuildInfo",
           "select_output", "Engine", "TorchEngine", "ONNX_OPSET", "OnnxEngine", "export_onnx", "model_fingerprint",
           "groq_chips", "GroqEngine"]

BACKENDS = ("cpu", "onnxruntime", "cuda", "groq")
ONNX_OPSET = 17


class BackendError(LabkitError, RuntimeError):
    """A backend cannot run here; the message says why and what to do."""

    shown_as = "BackendError"


@dataclass
class BuildInfo:
    """What preparing a backend did: exported, compiled, or reused a cached build."""

    backend: str
    input_shape: str
    artifact: str
    built_now: bool
    seconds: float


def select_output(output: Any, task: str) -> Any:
    if isinstance(output, (tuple, list)):
        output = output[0]
    if hasattr(output, "logits") and task == "classification":
        return output.logits
    if hasattr(output, "last_hidden_state"):
        return output.last_hidden_state
    return output


class Engine:
    """One backend ready to run one model at one fixed input shape."""

    name = "engine"
    on_chip_latency_s: Optional[float] = None
    build: Optional[BuildInfo] = None

    def __call__(self, inputs: Dict[str, Any]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def run_dataset(self, batches: Sequence[Dict[str, Any]], desc: str = "",
                    on_last: Optional[Callable[[], None]] = None) -> Tuple[List[Any], float]:
        """Outputs for every batch and the loop's wall time, as the proof point times its CPU row.

        ``on_last`` is called once the last batch is done, before the bar shows 100 %: what the
        bar shows is then already measured (an interrupt that follows it keeps the pass)."""
        from labkit import progress

        outputs = []
        start = time.perf_counter()
        with progress.bar(total=len(batches), desc=desc or self.name, unit="batch") as shown:
            for inputs in batches:
                outputs.append(self(inputs))
                if on_last is not None and len(outputs) == len(batches):
                    on_last()
                shown.update(1)
        return outputs, time.perf_counter() - start

    def benchmark(self, inputs: Dict[str, Any], repetitions: int = 100, budget_s: float = 10.0) -> float:
        """Seconds per inference on the compile-time inputs (GroqFlow's benchmark() default:
        100 repetitions of the inputs given to groqit); one untimed warm-up run first. On a slow
        host it stops after ``budget_s`` seconds (at least 10 runs), so a 2-core laptop is not
        kept busy for minutes."""
        self(inputs)
        start = time.perf_counter()
        for done in range(1, repetitions + 1):
            self(inputs)
            if done >= 10 and time.perf_counter() - start > budget_s:
                break
        return (time.perf_counter() - start) / done


class TorchEngine(Engine):
    """PyTorch eager: the proof point's ``cpu`` row, and the same on a CUDA GPU."""

    def __init__(self, model: Any, task: str, device: str = "cpu"):
        import copy

        import torch

        self.name = device
        self.task = task
        self.device = torch.device(device)
        self.model = model if device == "cpu" else copy.deepcopy(model).to(self.device)
        self.model.eval()
        self.build = BuildInfo(device, "any (eager)", "none: PyTorch runs the model as written", False, 0.0)

    def __call__(self, inputs: Dict[str, Any]) -> Any:
        import torch

        with torch.no_grad():
            if self.device.type != "cpu":
                inputs = {k: v.to(self.device) for k, v in inputs.items()}
            out = select_output(self.model(**inputs), self.task)
            return out.float().cpu()  # .cpu() waits for the GPU, so the timing is complete


def model_fingerprint(model: Any) -> str:
    """A hash of the model's class, config and weights: the ONNX cache key."""
    cached = getattr(model, "_labkit_fingerprint", None)
    if cached:
        return cached
    digest = hashlib.sha256()
    digest.update(type(model).__name__.encode())
    digest.update(model.config.to_json_string().encode())
    for key, tensor in sorted(model.state_dict().items()):
        digest.update(key.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    model._labkit_fingerprint = digest.hexdigest()[:16]
    return model._labkit_fingerprint


def export_onnx(model: Any, task: str, inputs: Dict[str, Any], path: Path) -> None:
    """Export ``model`` at the fixed shape of ``inputs`` with torch.onnx.export.

    The TorchScript exporter (``dynamo=False`` where torch has that switch) needs no extra
    package; its deprecation and tracer warnings are expected for a fixed-shape trace.
    """
    import torch

    names = list(inputs)

    class SingleOutput(torch.nn.Module):
        """``model`` as forward(input_ids, [token_type_ids,] attention_mask) -> one tensor, so the
        traced graph has positional inputs and one named output."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *args: Any) -> Any:
            return select_output(self.inner(**dict(zip(names, args))), task)

    wrapper = SingleOutput().eval()
    output_name = "logits" if task == "classification" else "last_hidden_state"
    kwargs: Dict[str, Any] = {"input_names": names, "output_names": [output_name], "opset_version": ONNX_OPSET,
                              "do_constant_folding": True}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False

    def export(partial: str) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.no_grad():
                torch.onnx.export(wrapper, tuple(inputs[n] for n in names), partial, **kwargs)

    produce_atomic(path, export)


class OnnxEngine(Engine):
    """ONNX Runtime on the CPU, running the fixed-shape export: the portable compiled engine."""

    name = "onnxruntime"

    def __init__(self, model: Any, task: str, dummy: Dict[str, Any], label: str = "model",
                 threads: Optional[int] = None):
        import onnxruntime
        import torch

        from labkit.data.cache import cache_dir

        self.task = task
        shape = tuple(dummy["input_ids"].shape)
        slug = "".join(c if c.isalnum() else "-" for c in label.split("/")[-1])[:40]
        file = "{}-{}-b{}-l{}-opset{}-torch{}.onnx".format(slug, model_fingerprint(model), shape[0], shape[1],
                                                          ONNX_OPSET, torch.__version__.split("+")[0])
        self.path = cache_dir() / "onnx" / file
        start = time.perf_counter()
        built = not self.path.is_file()
        if built:
            export_onnx(model, task, dummy, self.path)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # errors only: no optimizer chatter in the notebook
        if threads:
            options.intra_op_num_threads = threads
        self.session = onnxruntime.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.build = BuildInfo(self.name, " x ".join(str(s) for s in shape) + " (fixed)", str(self.path), built,
                               time.perf_counter() - start)

    def __call__(self, inputs: Dict[str, Any]) -> Any:
        import torch

        feed = {name: inputs[name].numpy() for name in self.input_names}
        return torch.from_numpy(self.session.run(None, feed)[0])


#: GroqFlow's rule for the chips of a build (groqflow/common/build.py, calculate_num_chips).
PARAMETERS_PER_CHIP = 50000000


def _printed_error(text: str) -> str:
    """The message of GroqFlow's ``log_error`` in what it printed: after "Error:", before the whale."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    if "Error:" not in text:
        return " ".join(text.split())
    message = text.split("Error:", 1)[1].split("\u2584", 1)[0].split("\u2588", 1)[0]
    return " ".join(message.replace("**", "").split())


def _left_in_log(stream: Any) -> str:
    """What GroqFlow printed into a log it left as sys.stderr: a run that fails on the chips raises
    its ModelRuntimeError while sys.stderr is still onnxflow's ``build.Logger`` of the build's
    log_execute.txt (``GroqModel._execute_locally``), so its message is there, unflushed."""
    log_file = getattr(stream, "log_file", None)
    if log_file is None:
        return ""
    log_file.flush()
    try:
        return Path(log_file.name).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


@contextlib.contextmanager
def _groqflow(doing: str) -> Iterator[None]:
    """Run a GroqFlow call: its failure becomes one BackendError line saying what GroqFlow said."""
    import onnxflow.common.exceptions as exp

    stdout, printed, said = sys.stdout, io.StringIO(), None
    try:
        with contextlib.redirect_stderr(printed):
            try:
                yield
            except (exp.Error, exp.StageError) as error:
                text = printed.getvalue()
                if "Error:" not in text:
                    text += _left_in_log(sys.stderr)
                said = "{}: {}".format(type(error).__name__, _printed_error(text) or error)
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


def available(name: str) -> Tuple[bool, str]:
    """Whether backend ``name`` can run here, and why not."""
    from labkit.devices import module_available

    if name == "cpu":
        return True, "PyTorch eager on the host CPU"
    if name == "onnxruntime":
        missing = [m for m in ("onnxruntime", "onnx") if not module_available(m)]
        if missing:
            return False, "{} not installed (pip install onnx onnxruntime)".format(" and ".join(missing))
        return True, "ONNX Runtime, CPU execution provider"
    if name == "cuda":
        from labkit.devices import cuda_available

        return (True, "PyTorch eager on a CUDA GPU") if cuda_available() else \
            (False, "torch sees no CUDA GPU here (torch.cuda.is_available() is False)")
    chips, reason = groq_chips()
    return chips > 0, reason


def parse_backends(text: str) -> List[str]:
    """Names in a backends parameter ("auto" or a comma list); raises ValueError on unknown ones."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError("no backend named; use 'auto' or a comma list of {}".format(", ".join(BACKENDS)))
    if names == ["auto"]:
        return names
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise ValueError("unknown backend{} {}; use 'auto' or a comma list of {}".format(
            "s" if len(unknown) > 1 else "", ", ".join(repr(n) for n in unknown), ", ".join(BACKENDS)))
    return names


def resolve_backends(text: str) -> List[str]:
    """The backends to run, cpu first (the reference): "auto" takes every backend present here; a
    list naming an absent backend raises ValueError with the reason, never a silent skip."""
    names = parse_backends(text)
    if names == ["auto"]:
        return [n for n in BACKENDS if available(n)[0]]
    absent = []
    for name in names:
        ok, reason = available(name)
        if not ok:
            absent.append("{!r} is not available here: {}".format(name, reason))
    if absent:
        raise ValueError("; ".join(absent))
    return ["cpu"] + [n for n in dict.fromkeys(names) if n != "cpu"]


def make(name: str, model: Any, task: str, dummy: Dict[str, Any], label: str = "model",
         threads: Optional[int] = None) -> Engine:
    """A ready engine for backend ``name`` (exporting or compiling at the shape of ``dummy``)."""
    if name == "onnxruntime":
        return OnnxEngine(model, task, dummy, label, threads)
    if name == "groq":
        return GroqEngine(model, task, dummy, label)
    if name not in ("cpu", "cuda"):
        raise BackendError("backend {!r}: unknown; use one of {}".format(name, ", ".join(BACKENDS)))
    return TorchEngine(model, task, name)
