"""What every inference backend of the Groq exercise is: an :class:`Engine` for one model at one
input shape, what building it did (:class:`BuildInfo`), and the two that run on the host: PyTorch
eager (:class:`TorchEngine`) and ONNX Runtime (:class:`OnnxEngine`). Every engine returns the logits
(classification) or the last hidden state (similarity) as a CPU float tensor, so predictions compare
one to one.

ONNX Runtime runs the model exported with ``torch.onnx.export`` at a FIXED shape (batch,
max_seq_length), like GroqFlow's own first build stage. Exports are cached by model contents and
shape: a new shape means a new export, as it means a new GroqChip program.
"""

from __future__ import annotations

import hashlib
import inspect
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from labkit.errors import LabkitError
from labkit.files import produce_atomic

__all__ = ["BackendError", "BuildInfo", "select_output", "Engine", "TorchEngine", "ONNX_OPSET", "OnnxEngine",
           "export_onnx", "model_fingerprint"]

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
