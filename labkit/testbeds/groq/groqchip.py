"""The Groq exercise's vendor path: GroqFlow on a GroqChip, driven as the proof point drives it.

    chips, reason = groq_chips()                    # GroqFlow's own count (lspci vendor id 1de0)
    engine = GroqEngine(loaded.model, loaded.task, dummy, label=loaded.requested)

``groqit(model, inputs)`` builds the program, ``run_abunch`` gives the predictions,
``benchmark()`` (compile-time inputs, 100 repetitions) the end-to-end latency and
``estimate_performance().compute_latency`` the on-chip latency. Written from GroqFlow's
documented API and tested against a fake that speaks it (tests/fakes/groqflow); verified
only on the testbed.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from labkit.testbeds.groq.engine import BuildInfo, Engine

__all__ = ["groq_chips", "GroqEngine"]


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

    def run_dataset(self, batches: Sequence[Dict[str, Any]], desc: str = "",
                    on_last: Optional[Callable[[], None]] = None) -> Tuple[List[Any], float]:
        print("Running inference on GroqChip ({} inputs in one run_abunch call).".format(len(batches)))
        start = time.perf_counter()
        results = self.gmodel.run_abunch(list(batches))
        seconds = time.perf_counter() - start
        if on_last is not None:
            on_last()
        if len(batches) == 1:  # run_abunch returns a single result for a single input
            results = [results]
        return [self._tensor(r) for r in results], seconds

    def benchmark(self, inputs: Dict[str, Any], repetitions: int = 100, budget_s: float = 10.0) -> float:
        """GroqFlow's benchmark(): the compile-time inputs, run on the chip; seconds."""
        self.on_chip_latency_s = float(self.gmodel.estimate_performance().compute_latency)
        return float(self.gmodel.benchmark().latency)
