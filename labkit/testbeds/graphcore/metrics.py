"""The Graphcore exercise's metrics: what the MNIST run (IPU or portable) and its log reader record.

``BERT_METRICS`` is the table of the course's PopTorch BERT demo, which only the log reader sees
(``graphcore/bert``: the sample output the course ships beside the MNIST tutorial).
"""

from __future__ import annotations

from labkit.metrics import Metric, MetricTable
from labkit.testbeds.graphcore.spec import EXERCISE

__all__ = ["METRICS", "BERT_METRICS"]

METRICS = MetricTable(
    (EXERCISE,),
    Metric("test_accuracy", "%", "accuracy on the test images after training, the mean of the test batches' "
                                 "accuracies (as the tutorial computes it)", primary=True),
    Metric("train_throughput", "samples/s", "training samples per second over every step after the first (the "
                                            "first is warm-up or compilation)", primary=True, timing=True),
    Metric("epoch_time", "s", "seconds of one steady epoch, warm-up and compilation left out (a run: an epoch's "
                              "samples at train_throughput; a log: the median epoch after the first)",
           primary=True, timing=True),
    Metric("first_epoch_time", "s", "seconds of the first epoch; on an IPU it includes the graph compilation",
           timing=True),
    Metric("total_train_time", "s", "seconds of all training epochs together", timing=True),
    Metric("mean_epoch_time", "s", "seconds per epoch read from the log's Epochs bar (tqdm's s/it or its clock); "
                                   "first epoch included", timing=True),
    Metric("train_compile_time", "s", "seconds PopTorch spent compiling the training graph (0 when loaded from "
                                      "its executable cache)", timing=True),
    Metric("test_compile_time", "s", "seconds PopTorch spent compiling the inference graph", timing=True),
    Metric("warmup_time", "s", "seconds of the portable run's first step (allocation, kernel selection): the "
                               "stand-in for the IPU's compilation", timing=True),
    Metric("tested_samples", "", "test samples the test pass saw before an interrupt cut it short (test_accuracy "
                                 "is over these only)"),
    Metric("test_throughput", "samples/s", "test samples per second in the test pass", timing=True),
    Metric("first_epoch_ratio", "", "first epoch time / steady epoch time, from the log: how much compilation "
                                    "slowed the first epoch"),
    Metric("train_accuracy", "%", "mean step accuracy over the last epoch's training steps"),
    Metric("final_loss", "", "training loss (cross-entropy) of the last step, the mean over its micro-batches"),
    Metric("final_batch_loss", "", "the last training loss the log prints (one batch's)"),
    Metric("steps_per_epoch", "", "weight-update steps (batch_size x device_iterations samples) per epoch"),
)

BERT_METRICS = MetricTable(
    ("graphcore/bert",),
    Metric("throughput", "samples/s", "training samples per second of the last logged step", primary=True,
           timing=True),
    Metric("total_loss", "", "masked-LM + next-sentence loss of the last logged step", primary=True),
    Metric("mlm_loss", "", "masked-LM loss of the last logged step"),
    Metric("nsp_loss", "", "next-sentence-prediction loss of the last logged step"),
    Metric("mlm_acc", "", "masked-LM accuracy (a fraction, not %) of the last logged step"),
    Metric("nsp_acc", "", "next-sentence accuracy (a fraction, not %) of the last logged step"),
    Metric("last_step", "", "the last training step the log prints"),
    Metric("compile_s", "s", "seconds of graph compilation, before training (not in throughput or training time)",
           timing=True),
    Metric("training_time_s", "s", "the demo's 'Training time', compilation excluded", timing=True),
)
