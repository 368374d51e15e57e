"""Portable BERT pre-training (masked LM + next sentence) for the Cerebras and SambaNova exercises.

The testbeds train BERT-Large with their own stacks; this package trains the same model
(Hugging Face ``transformers.BertForPreTraining``, random initialisation, no hub access) on
CUDA, Apple MPS or CPU, so the exercises run and report the same metrics anywhere.

    from labkit import bert
    model = bert.build_model("tiny", max_seq_length=128, seed=0)
    batches = bert.synthetic_batches(8, 128, model.config.vocab_size, seed=0)
    result = bert.train(model, batches, steps=20, log_steps=10, device="cpu")
    result.global_rate, result.losses[-1]

What each name does: docs/cerebras.md, "The portable path".
"""

from __future__ import annotations

from labkit.bert.batches import synthetic_batches
from labkit.bert.device_plan import COMPILE_PAYS_SECONDS, StepPlan, flops_per_sequence, plan_steps
from labkit.bert.loop import RateTracker, StepMeter, add_gpu_metrics, record_steps
from labkit.bert.presets import BERT_VOCAB_SIZE, MODEL_SIZES, build_model, count_parameters, model_config
from labkit.bert.training import LogEntry, TrainResult, make_optimizer, pretraining_loss, train, train_step

__all__ = [
    "synthetic_batches",
    "COMPILE_PAYS_SECONDS", "StepPlan", "flops_per_sequence", "plan_steps",
    "RateTracker", "StepMeter", "add_gpu_metrics", "record_steps",
    "BERT_VOCAB_SIZE", "MODEL_SIZES", "build_model", "count_parameters", "model_config",
    "LogEntry", "TrainResult", "make_optimizer", "pretraining_loss", "train", "train_step",
]
