"""What every inference backend of the Groq exercise is: an :class:`Engine` for one model at one
input shape, what building it did (:class:`BuildInfo`), and PyTorch eager (:class:`TorchEngine`).
Every engine returns the logits (classification) or the last hidden state (similarity) as a CPU
float tensor, so predictions compare one to one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from labkit.errors import LabkitError

__all__ = ["BackendError", "BuildInfo", "select_output", "Engine", "TorchEngine"]


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
            out = select_output(self.model(**inputs), self.task)
            return out.float().cpu()  # .cpu() waits for the GPU, so the timing is complete
