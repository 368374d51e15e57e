"""The BERT-Large exercise's table of metrics: the same names whichever path made the run.

    from labkit.testbeds.cerebras import bert_large
    bert_large.METRICS.frame()                  # what each metric means, its unit

A log's run gets the exercise's names from :func:`~labkit.testbeds.cerebras.bert_large.log.standardize`,
with the log reader's names beside them, so tables of logs and portable runs line up.
"""

from __future__ import annotations

from labkit.metrics import Metric, MetricTable
from labkit.testbeds.cerebras.bert_large.spec import EXERCISE
from labkit.testbeds.cerebras.log import LOG_METRICS

__all__ = ["METRICS"]

#: Every metric of a modelzoo run: the exercise's (BERT-Large) and the other modelzoo logs the reader knows.
METRICS = MetricTable(
    (EXERCISE, "cerebras/gpt2", "cerebras/gptj"),
    Metric("samples_per_sec", "samples/s", "the last GlobalRate: samples per second averaged since the first step",
           primary=True, timing=True),
    Metric("final_loss", "", "training loss at the last logged step (BERT: masked LM + next sentence)",
           primary=True),
    Metric("time_per_sample", "s", "total_time / total_samples (1 / samples_per_sec when the log lacks them)",
           timing=True),
    Metric("total_samples", "samples", "samples trained on, from 'Processed N sample(s) in T seconds'"),
    Metric("total_time", "s", "seconds of training, from 'Processed N sample(s) in T seconds' (compile excluded)",
           timing=True),
    Metric("steps", "", "training steps run (the last step logged)"),
    Metric("compile_time", "s", "seconds the CS-2 compile took, cluster queue excluded (compile_s)", timing=True),
    Metric("warmup_time", "s", "portable run: seconds of the first step (allocation, kernel selection); the "
                               "CS-2 compile has no portable analogue", timing=True),
    Metric("steady_rate", "samples/s", "portable run: samples per second after the warm-up (the first step, "
                                       "warmup_time, left out): the later steps' samples over their time; "
                                       "model_tflops and mfu come from it", timing=True),
    Metric("setup_time", "s", "portable run: seconds building the model", timing=True),
    Metric("peak_memory_gb", "GB", "portable run on CUDA: torch.cuda.max_memory_allocated over the training"),
    Metric("model_tflops", "TFLOP/s", "portable run on CUDA: steady_rate x model FLOPs a sequence "
                                      "(6 x parameters x tokens + attention)", timing=True),
    Metric("mfu", "", "portable run on CUDA: model_tflops over the GPU's named bf16 dense peak", timing=True),
    # The log reader's names (labkit.logs gives a modelzoo log these), less the two above.
    *(m for m in LOG_METRICS if m.name not in ("steps", "final_loss")),
)
