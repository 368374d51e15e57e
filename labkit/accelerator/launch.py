"""How a training step is launched: captured once as a CUDA graph and replayed where its shapes are
fixed (what ``device_iterations`` means on an IPU: the host hands over many micro-batches at once),
compiled with ``torch.compile`` when asked, eager on a CPU or MPS.

    step = CapturedStep(step_fn, (indices,), device, keep=(model, optimizer))
    outputs = step(next_indices)     # copies into the static inputs, replays the graph
    step.mode                        # "cuda graph" | "compiled" | "eager"
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, List, Sequence, Tuple

from labkit.accelerator.precision import AcceleratorError, device_info

__all__ = ["LAUNCH_MODES", "CapturedStep", "measure_step_seconds", "sync"]

LAUNCH_MODES = ("auto", "cuda graph", "compiled", "eager")


class CapturedStep:
    """``step_fn(*inputs)`` launched as ``mode`` says ("auto": a CUDA graph on CUDA, eager elsewhere).

    A CUDA graph is captured after ``warmup`` steps on a side stream (cuBLAS and the allocator settle
    there, as torch's documentation asks). ``keep``: modules and optimizers whose tensors the warm-up
    steps must not change; they are put back in place (same addresses) after capture, and optimizer
    state first made during the warm-up is zeroed, as a fresh optimizer's is, so training from the
    first replay computes what eager steps would. A step that cannot be captured (it reads a value
    on the host, say) runs eager: ``chosen`` keeps the mode the policy chose, ``capture_error`` the
    capture's error ("RuntimeError: ..."), and ``why`` says both, so a run records that its launch is
    not the one chosen, and why. ``__call__`` returns the step's outputs; with a CUDA graph they are
    its static outputs, overwritten by the next replay.
    """

    def __init__(self, step_fn: Callable[..., Any], example_inputs: Sequence[Any], device: Any, mode: str = "auto",
                 *, keep: Sequence[Any] = (), warmup: int = 3):
        if mode not in LAUNCH_MODES:
            raise AcceleratorError("launch mode={!r}: allowed: {}.".format(mode, ", ".join(repr(m) for m in LAUNCH_MODES)))
        info = device_info(device)
        if mode == "cuda graph" and info.kind != "cuda":
            raise AcceleratorError("launch mode='cuda graph' needs a CUDA GPU; {} is not one. Allowed there: "
                                   "'auto', 'compiled', 'eager'.".format(info.describe()))
        self.step_fn = step_fn
        self.mode = "cuda graph" if mode == "auto" and info.kind == "cuda" else ("eager" if mode == "auto" else mode)
        self.chosen = self.mode
        self.capture_error = ""
        self.why = {"cuda graph": "captured once as a CUDA graph and replayed (fixed shapes)",
                    "compiled": "compiled with torch.compile", "eager": "eager (no capture off a GPU)"}[self.mode]
        self._run = step_fn
        if self.mode == "compiled":
            import torch

            self._run = torch.compile(step_fn)
        elif self.mode == "cuda graph":
            try:
                self._capture(example_inputs, keep, warmup)
            except RuntimeError as exc:  # e.g. a host read inside the step: capture is impossible, eager works
                first_line = (str(exc).splitlines() or [""])[0]
                self.capture_error = "{}: {}".format(type(exc).__name__, first_line)
                self.mode, self.why = "eager", "eager: the step could not be captured as a CUDA graph ({})".format(
                    self.capture_error)
                self._run = step_fn

    def _capture(self, example_inputs: Sequence[Any], keep: Sequence[Any], warmup: int) -> None:
        import torch

        self._static = [x.clone() for x in example_inputs]
        saved = _snapshot(keep)
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(max(1, warmup)):
                    self.step_fn(*self._static)
            torch.cuda.current_stream().wait_stream(side)
            self._graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self._graph):
                self._outputs = self.step_fn(*self._static)
        finally:  # captured or not, the warm-up steps leave no trace (an eager fallback starts afresh)
            torch.cuda.synchronize()
            _restore(keep, saved)
        self._run = self._replay

    def _replay(self, *inputs: Any) -> Any:
        for static, given in zip(self._static, inputs):
            if given is not static:
                static.copy_(given, non_blocking=True)
        self._graph.replay()
        return self._outputs

    def __call__(self, *inputs: Any) -> Any:
        return self._run(*inputs)


def _tensors(thing: Any) -> List[Any]:
    import torch

    if isinstance(thing, torch.nn.Module):
        return [t for t in thing.state_dict(keep_vars=True).values() if isinstance(t, torch.Tensor)]
    if isinstance(thing, torch.optim.Optimizer):
        return [t for state in thing.state.values() for t in state.values() if isinstance(t, torch.Tensor)]
    raise AcceleratorError("keep= takes torch modules and optimizers; got {!r}.".format(type(thing).__name__))


def _snapshot(keep: Sequence[Any]) -> List[Tuple[Any, ...]]:
    return [tuple((t, t.detach().clone()) for t in _tensors(thing)) for thing in keep]


def _restore(keep: Sequence[Any], saved: List[Tuple[Any, ...]]) -> None:
    import torch

    with torch.no_grad():
        for thing, pairs in zip(keep, saved):
            before = {id(t): copy for t, copy in pairs}
            for tensor in _tensors(thing):
                if id(tensor) in before:
                    tensor.copy_(before[id(tensor)])
                else:  # optimizer state the warm-up made: a fresh optimizer's is zero
                    tensor.zero_()


def measure_step_seconds(step: Callable[[], None], device: Any, *, warmup: int = 1, repeats: int = 3) -> float:
    """This machine's seconds per ``step()``, the median of ``repeats`` after ``warmup`` (CUDA synchronized
    around each), for the time a plan shows before a run and its refusal of runs that are too long."""
    if repeats < 1 or warmup < 0:
        raise AcceleratorError("measure_step_seconds: repeats={} and warmup={}; allowed: repeats >= 1, "
                               "warmup >= 0.".format(repeats, warmup))
    for _ in range(warmup):
        step()
    sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sync(device: Any) -> None:
    """Wait for the device's queued work (CUDA, MPS); nothing on the CPU."""
    import torch

    kind = str(getattr(device, "type", device)).split(":")[0]  # a torch.device, or a name like "cuda:0"
    if kind == "cuda":
        torch.cuda.synchronize(device)
    elif kind == "mps" and hasattr(torch, "mps"):
        torch.mps.synchronize()
