"""The Groq exercise's inference backends: which exist, which run here, and one ready engine."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from labkit.testbeds.groq.engine import BackendError, Engine, OnnxEngine, TorchEngine
from labkit.testbeds.groq.groqchip import GroqEngine, groq_chips

__all__ = ["BACKENDS", "available", "parse_backends", "resolve_backends", "make"]

BACKENDS = ("cpu", "onnxruntime", "cuda", "groq")


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
    if name in ("cpu", "cuda"):
        return TorchEngine(model, task, name)
    if name == "onnxruntime":
        return OnnxEngine(model, task, dummy, label, threads)
    if name == "groq":
        return GroqEngine(model, task, dummy, label)
    raise BackendError("backend {!r}: unknown; use one of {}".format(name, ", ".join(BACKENDS)))
