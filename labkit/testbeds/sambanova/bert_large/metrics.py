"""The SambaNova exercise's metrics: what the portable ranks, a Slurm job and the log reader record."""

from __future__ import annotations

from labkit.metrics import Metric, MetricTable
from labkit.testbeds.sambanova.bert_large.spec import EXERCISE

__all__ = ["METRICS"]

METRICS = MetricTable(
    (EXERCISE,),
    # SambaNova's own name; the training log calls its unit sequences/s, and records say so after the unit.
    Metric("training_sequences_per_second", "tokens/s", "SambaNova's name, but ntasks x batch x steps x "
           "max_seq_length / e2e_train_time: tokens per second, not sequences", primary=True, timing=True),
    Metric("sequences_per_second", "sequences/s", "ntasks x batch x steps / e2e_train_time: sequences per second",
           primary=True, timing=True),
    Metric("final_loss", "", "training loss (masked LM + next sentence) of the last step", primary=True),
    Metric("e2e_train_time", "s", "seconds of training end to end; each rank runs a fixed number of steps, so it "
                                  "stays about flat as ntasks grows", timing=True),
    Metric("throughput_per_task", "tokens/s", "training_sequences_per_second / ntasks: one rank's share",
           timing=True),
    Metric("training_samples_per_second", "sequences/s", "the training log's own samples-per-second figure",
           timing=True),
    Metric("ranks_seen", "", "ranks whose training steps appear in the log"),
    Metric("steps", "", "steps rank 0 finished before an interrupt (interrupted portable runs only)"),
    Metric("replicas_in_sync", "", "portable run: True when every rank's weights agree after training (the "
                                   "gradient all-reduce worked)"),
    Metric("throughput_check", "", "the course script's throughput assertion, when it failed: at which bound"),
    Metric("compile_s", "s", "the compile log's 'COMPILE END AT': seconds from the script's start to the end of "
                             "compiling the PEF", timing=True),
    Metric("duration_s", "s", "the compile log's 'Duration': compile and submit only, never training",
           timing=True),
    Metric("compile_skipped", "", "True when no compile ran because the compiled PEF already existed"),
    Metric("submitted", "", "whether Slurm accepted the training job (False: rejected at submission)"),
)
