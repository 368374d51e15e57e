"""The LLaMA-2-7B exercise's metrics, under the same names from a CS-3 log and from a portable run.

    from labkit.testbeds.cerebras.llama2_7b.metrics import METRICS, add_tokens_per_s
    METRICS.frame()                       # what each metric means
    add_tokens_per_s(run, 1024)           # tokens_per_s = global_rate x sequence length
"""

from __future__ import annotations

from typing import Optional

from labkit.metrics import Metric, MetricTable
from labkit.results import Run
from labkit.testbeds.cerebras.llama2_7b.spec import EXERCISE
from labkit.testbeds.cerebras.log import LOG_METRICS

__all__ = ["METRICS", "add_tokens_per_s"]

_OWN = (
    Metric("global_rate", "samples/s", "the modelzoo's GlobalRate at the last logged step: samples (sequences) per "
                                       "second averaged since the first step", primary=True, timing=True),
    Metric("tokens_per_s", "tokens/s", "global_rate x sequence length: tokens trained on per second",
           primary=True, timing=True),
    Metric("final_loss", "", "training loss (next-token cross-entropy) at the last logged step", primary=True),
)

#: What only a portable run measures.
_PORTABLE = (
    Metric("first_step_s", "s", "portable: seconds of the first step alone (allocation, kernel choice); part of "
                                "train_seconds and the GlobalRate", timing=True),
    Metric("steady_rate", "samples/s", "portable: samples (sequences) per second after the warm-up (the first step, "
                                       "first_step_s, left out): the later steps' samples over their time; "
                                       "model_tflops and mfu come from it", timing=True),
    Metric("build_s", "s", "portable: seconds to load the corpus and build the tokenizer and model (not training)",
           timing=True),
    Metric("validation_loss", "", "portable: mean loss on held-out text after training (the corpus's validation "
                                  "split)"),
    Metric("parameters", "", "portable: the model's parameters (LLaMA-2-7B has 6.74 billion)"),
    Metric("peak_memory_gb", "GB", "portable on CUDA: torch.cuda.max_memory_allocated over the training"),
    Metric("model_tflops", "TFLOP/s", "portable on CUDA: steady_rate x sequence length x (6 x parameters + "
                                      "attention) FLOPs a token", timing=True),
    Metric("mfu", "", "portable on CUDA: model_tflops over the GPU's named bf16 dense peak", timing=True),
)

#: Every metric of a LLaMA-2-7B run: a CS-3 log's (``cszoo fit``) and a portable run's.
METRICS = MetricTable(
    (EXERCISE,),
    *(_OWN + tuple(m for m in LOG_METRICS if m.name not in {o.name for o in _OWN}) + _PORTABLE),
)


def add_tokens_per_s(run: Run, sequence_length: Optional[int]) -> bool:
    """Add ``tokens_per_s`` = ``global_rate`` x ``sequence_length``; False (and nothing added) when either is missing."""
    rate = run.metrics.get("global_rate")
    if rate is None or not sequence_length:
        return False
    METRICS.add(run, "tokens_per_s", round(float(rate) * int(sequence_length), 1))
    return True
