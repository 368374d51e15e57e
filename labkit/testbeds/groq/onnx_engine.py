"""ONNX Runtime for the Groq exercise: the model exported with ``torch.onnx.export`` at a FIXED
shape (batch, max_seq_length), like GroqFlow's own first build stage, and run on the CPU. Exports
are cached by model contents and shape: a new shape means a new export, as it means a new
GroqChip program."""

from __future__ import annotations

import hashlib
import inspect
import time
import warnings
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from labkit.files import produce_atomic
from labkit.testbeds.groq.engine import BuildInfo, Engine, select_output

__all__ = ["ONNX_OPSET", "OnnxEngine", "export_onnx", "model_fingerprint"]

ONNX_OPSET = 17


def _single_output(model: Any, task: str, names: Sequence[str]) -> Any:
    """``model`` as forward(input_ids, [token_type_ids,] attention_mask) -> one tensor, so the
    traced graph has positional inputs and one named output."""
    import torch

    class SingleOutput(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *args: Any) -> Any:
            return select_output(self.inner(**dict(zip(names, args))), task)

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
    wrapper = _single_output(model, task, names)
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
