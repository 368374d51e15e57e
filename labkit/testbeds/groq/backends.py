"""Inference backends for the Groq exercise: PyTorch eager (CPU, CUDA), ONNX Runtime, GroqFlow.

    from labkit.testbeds.groq import backends
    names = backends.resolve_backends("auto")            # ["cpu", "onnxruntime", ...]
    engine = backends.make("onnxruntime", loaded, dummy)   # exports (or reuses) a fixed-shape ONNX file
    outputs, seconds = engine.run_dataset(batches)       # the dataset loop, timed as one wall time
    engine.benchmark(dummy, repetitions=100)             # seconds per inference on compile-time inputs

Every backend returns the same thing for one input dict: the logits (classification) or the
last hidden state (similarity), as a CPU float tensor, so predictions compare one to one.

The ONNX file is exported with ``torch.onnx.export`` at a FIXED shape (batch, max_seq_length),
like GroqFlow's own first build stage, and cached by model contents and shape under
``$LABKIT_CACHE_DIR/onnx``: a new ``max_seq_length`` or ``batch_size`` means a new export, the
way a new shape means a new GroqChip program.

The GroqFlow backend follows the proof point: ``groqit(model, inputs)``, ``run_abunch`` for
the predictions, ``benchmark()`` (compile-time inputs, 100 repetitions) for end-to-end latency
and ``estimate_performance().compute_latency`` for on-chip latency. It was written from
GroqFlow's documented API and tested against a fake that speaks it; it is verified only on the
testbed.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["BACKENDS", "BackendError", "available", "resolve_backends", "make", "BuildInfo",
           "Engine", "TorchEngine", "OnnxEngine", "GroqEngine", "export_onnx", "model_fingerprint"]

BACKENDS = ("cpu", "onnxruntime", "cuda", "groq")
ONNX_OPSET = 17


class BackendError(RuntimeError):
    """A backend cannot run here; the message says why and what to do."""

    def _render_traceback_(self) -> List[str]:
        return ["BackendError: " + str(self)]


def groq_chips() -> Tuple[int, str]:
    """(number of GroqChips, reason) using GroqFlow's own count (lspci vendor id 1de0)."""
    from labkit.devices import module_available

    if not module_available("groqflow"):
        return 0, "groqflow is not installed (it comes with the GroqWare SDK on a GroqNode)"
    try:
        from groqflow.common import sdk_helpers

        chips = int(sdk_helpers.get_num_chips_available())
    except Exception as exc:  # e.g. lspci missing: GroqFlow raises GroqModelEnvError
        return 0, "groqflow cannot count GroqChips here ({})".format(exc)
    return chips, "{} GroqChip(s) found".format(chips) if chips else "groqflow is installed but no GroqChip was found"


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
    if name == "groq":
        chips, reason = groq_chips()
        return chips > 0, reason
    return False, "unknown backend"


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
    """The backends to run, cpu first (the reference every other backend is compared with).

    "auto" takes every backend present here; a list naming an absent backend is an error
    (raised as ValueError with the reason), never a silent skip.
    """
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


# ---------------------------------------------------------------------------------------------


@dataclass
class BuildInfo:
    """What preparing a backend did: exported, compiled, or reused a cached build."""

    backend: str
    input_shape: str
    artifact: str
    built_now: bool
    seconds: float


def _select_output(output: Any, task: str) -> Any:
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

    def run_dataset(self, batches: Sequence[Dict[str, Any]], desc: str = "") -> Tuple[List[Any], float]:
        """Outputs for every batch and the loop's wall time, as the proof point times its CPU row."""
        from labkit import progress

        outputs = []
        start = time.perf_counter()
        for inputs in progress.bar(batches, total=len(batches), desc=desc or self.name, unit="batch"):
            outputs.append(self(inputs))
        return outputs, time.perf_counter() - start

    def benchmark(self, inputs: Dict[str, Any], repetitions: int = 100, budget_s: float = 10.0) -> float:
        """Seconds per inference on the compile-time inputs (GroqFlow's benchmark() default:
        100 repetitions of the inputs given to groqit); one untimed warm-up run first. On a slow
        host it stops after ``budget_s`` seconds (at least 10 runs), so a 2-core laptop is not
        kept busy for minutes."""
        self(inputs)
        done = 0
        start = time.perf_counter()
        while done < repetitions:
            self(inputs)
            done += 1
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
            out = _select_output(self.model(**inputs), self.task)
            return out.float().cpu()  # .cpu() waits for the GPU, so the timing is complete


class _SingleOutput:
    """Wraps a transformers model as forward(input_ids, [token_type_ids,] attention_mask) ->
    one tensor, so the traced graph has positional inputs and one named output."""

    def __new__(cls, model: Any, task: str, input_names: Sequence[str]):
        import torch

        names = list(input_names)

        class SingleOutput(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = model

            def forward(self, *args: Any) -> Any:
                return _select_output(self.inner(**dict(zip(names, args))), task)

        return SingleOutput().eval()


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
    value = digest.hexdigest()[:16]
    try:
        object.__setattr__(model, "_labkit_fingerprint", value)
    except Exception:  # a model that refuses attributes is hashed again next time
        pass
    return value


def export_onnx(model: Any, task: str, inputs: Dict[str, Any], path: Path) -> None:
    """Export ``model`` at the fixed shape of ``inputs`` with torch.onnx.export.

    The TorchScript exporter (``dynamo=False`` where torch has that switch) needs no extra
    package; its deprecation and tracer warnings are expected for a fixed-shape trace.
    """
    import torch

    names = list(inputs)
    wrapper = _SingleOutput(model, task, names)
    output_name = "logits" if task == "classification" else "last_hidden_state"
    kwargs: Dict[str, Any] = {"input_names": names, "output_names": [output_name], "opset_version": ONNX_OPSET,
                              "do_constant_folding": True}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial-{}".format(os.getpid()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            torch.onnx.export(wrapper, tuple(inputs[n] for n in names), str(partial), **kwargs)
    os.replace(partial, path)


class OnnxEngine(Engine):
    """ONNX Runtime on the CPU, running the fixed-shape export: the portable compiled engine."""

    name = "onnxruntime"

    def __init__(self, model: Any, task: str, dummy: Dict[str, Any], label: str = "model",
                 threads: Optional[int] = None):
        import onnxruntime
        import torch

        from labkit.testbeds.groq.sources import cache_dir

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


class GroqEngine(Engine):
    """GroqFlow on a GroqChip, as the proof point drives it. Verified only on the testbed."""

    name = "groq"

    def __init__(self, model: Any, task: str, dummy: Dict[str, Any], label: str = "model"):
        from groqflow import groqit

        self.task = task
        slug = "".join(c if c.isalnum() else "_" for c in label.split("/")[-1])[:40]
        start = time.perf_counter()
        # One build name per model: when the input shape changes, GroqFlow itself sees it and
        # rebuilds ("Input shape of model ... changed"), which is the lesson of the homework.
        self.gmodel = groqit(model, dummy, build_name="labkit_" + slug)
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
        return self._tensor(self.gmodel.run(inputs))

    def run_dataset(self, batches: Sequence[Dict[str, Any]], desc: str = "") -> Tuple[List[Any], float]:
        print("Running inference on GroqChip ({} inputs in one run_abunch call).".format(len(batches)))
        start = time.perf_counter()
        results = self.gmodel.run_abunch(list(batches))
        seconds = time.perf_counter() - start
        if len(batches) == 1:  # run_abunch returns a single result for a single input
            results = [results]
        return [self._tensor(r) for r in results], seconds

    def benchmark(self, inputs: Dict[str, Any], repetitions: int = 100, budget_s: float = 10.0) -> float:
        """GroqFlow's benchmark(): the compile-time inputs, run on the chip; seconds."""
        self.on_chip_latency_s = float(self.gmodel.estimate_performance().compute_latency)
        return float(self.gmodel.benchmark().latency)


def make(name: str, model: Any, task: str, dummy: Dict[str, Any], label: str = "model",
         threads: Optional[int] = None) -> Engine:
    """A ready engine for backend ``name`` (exporting or compiling at the shape of ``dummy``)."""
    if name in ("cpu", "cuda"):
        return TorchEngine(model, task, name)
    if name == "onnxruntime":
        return OnnxEngine(model, task, dummy, label, threads)
    if name == "groq":
        return GroqEngine(model, task, dummy, label)
    raise BackendError("backend {!r}: unknown; use one of {}".format(name, ", ".join(BACKENDS)))
