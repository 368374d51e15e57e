"""The portable path: :mod:`labkit.bert` trains BERT on a torch device, printing the modelzoo's log
lines (which :mod:`labkit.logs` reads as it reads a CS-2 log).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Optional

from labkit import accelerator, bert, devices, interrupts
from labkit.params import Config
from labkit.progress import bar
from labkit.results import Run
from labkit.testbeds.cerebras.bert_large.metrics import METRICS
from labkit.testbeds.cerebras.bert_large.spec import EXERCISE
from labkit.testbeds.cerebras.stream import echo_above, info_line, processed_line, train_line

__all__ = ["run_portable", "step_plan"]


def step_plan(config: Config, device: Any, measure: bool = True) -> bert.StepPlan:
    """Precision, micro-batch, launch and measured time per sample of a portable run (:func:`labkit.bert.plan_steps`)."""
    return bert.plan_steps(config.model_size, config.max_seq_length, config.batch_size, device, config.precision,
                           config.micro_batch_size, samples=config.batch_size * config.max_steps, measure=measure)


def run_portable(config: Config, device: Any, log_path: Optional[str] = None, echo: Callable[[str], None] = print,
                 progress: bool = True, steps: Optional[bert.StepPlan] = None) -> Run:
    """Train the portable BERT as ``config`` says with :func:`labkit.bert.train`, printing the modelzoo's
    log lines (to ``log_path`` too, when given); the record. ``steps``: the precision, micro-batch and
    launch the plan chose (default: :func:`step_plan` unmeasured). The first step counts in GlobalRate,
    as in the modelzoo's. Phases: setup, training, summary; the first interrupt in training ends it at
    the next step, a second one drops the step in progress.
    """
    import torch

    batch_size = config.batch_size
    device = torch.device(device) if isinstance(device, str) else device
    if steps is None or steps.micro_batch.global_batch != batch_size:
        steps = step_plan(config, device, measure=False)
    micro = steps.micro_batch
    log = open(log_path, "w") if log_path else None

    def emit(text: str, out: Callable[[str], None] = echo) -> None:
        if log is not None:
            log.write(text + "\n")
            log.flush()
        out(text)

    try:
        setup_start = time.perf_counter()
        model = bert.build_model(config.model_size, config.max_seq_length, config.seed)
        setup_time = time.perf_counter() - setup_start
        preset = bert.MODEL_SIZES[config.model_size]
        emit(info_line("Initializing module BertForPreTraining (labkit portable, transformers): model_size={}, {} layers, "
                   "hidden {}, {} heads, {:.1f}M parameters".format(config.model_size, preset["num_hidden_layers"],
                                                                    preset["hidden_size"], preset["num_attention_heads"],
                                                                    bert.count_parameters(model) / 1e6)))
        emit(info_line("Effective batch size is {}.".format(batch_size)))
        if micro.accumulation > 1:
            emit(info_line("Gradient accumulation: {} micro-batches of {} per step.".format(
                micro.accumulation, micro.size)))
        batches = bert.synthetic_batches(batch_size, config.max_seq_length, model.config.vocab_size, seed=config.seed)

        stop = interrupts.keep(lambda: None)
        stop.phase("training", check=False)
        device_label = getattr(device, "type", str(device)).upper()
        pbar = bar(total=config.max_steps, desc="batch {}".format(batch_size), unit="step") if progress else None
        above_bar = echo_above(pbar, echo) if pbar is not None else echo
        try:
            result = bert.train(model, batches, config.max_steps, config.log_steps, device,
                                config.learning_rate, micro_batch_size=micro.size if micro.accumulation > 1 else None,
                                seed=config.seed, progress=pbar, stop=stop, precision=steps.precision,
                                compile_model=steps.launch == "compiled",
                                on_log=lambda entry: emit(train_line(device_label, entry.step, entry.loss, entry.rate,
                                                                     entry.global_rate), above_bar))
        finally:
            if pbar is not None:
                pbar.close()

        stop.phase("summary", check=False)
        if result.interrupted:
            echo(result.interrupted)
        if len(result.losses) == config.max_steps:
            emit(info_line("Training completed successfully!"))
        emit(processed_line(result.total_samples, result.total_time))
    finally:
        if log is not None:
            log.close()

    run = Run(exercise=EXERCISE, source="portable", params=config.to_dict())
    run.params["device"] = str(device)
    run.params["precision"] = steps.precision.name
    bert.record_steps(run, result)
    last = result.logs[-1] if result.logs else None
    # The last GlobalRate, as a log gives it (at the last step; "Processed ... in T seconds"
    # is taken a moment later, so total_samples / total_time differs in the last digits).
    add = METRICS.add
    add(run, "samples_per_sec", round(last.global_rate if last else result.global_rate, 2))
    add(run, "time_per_sample", result.time_per_sample)
    add(run, "final_loss", round(result.final_loss, 5))
    add(run, "total_samples", result.total_samples)
    add(run, "total_time", result.total_time)
    add(run, "steps", len(result.losses))
    # The same numbers under the names labkit.logs gives a CS-2 log, so tables line up.
    add(run, "global_rate", round(last.global_rate, 2) if last else 0.0)
    add(run, "last_rate", round(last.rate, 2) if last else 0.0)
    if result.steady_seconds > 0:
        add(run, "steady_rate", round(result.steady_rate, 2))
    add(run, "samples", result.total_samples)
    add(run, "train_seconds", result.total_time)
    add(run, "setup_time", round(setup_time, 4))
    add(run, "warmup_time", round(result.warmup_time, 4))
    how = {"micro_batch": micro.size, "accumulation": micro.accumulation, "launch": steps.launch}
    if result.peak_memory_bytes is not None:
        how["peak_memory_bytes"] = result.peak_memory_bytes
        bert.add_gpu_metrics(run, METRICS, result.peak_memory_bytes,
                             bert.flops_per_sequence(config.model_size, config.max_seq_length), device)
    run.environment = devices.environment(device, dict(how, parameters=bert.count_parameters(model)))
    if log_path:
        run.environment["log_path"] = os.path.abspath(log_path)
    run.notes.append("Portable run: {} on synthetic masked-LM + next-sentence batches, not the CS-2. Rate and "
                     "GlobalRate follow the modelzoo's definitions.".format(device))
    if device.type != "cpu" or steps.precision.name != "fp32":  # a CPU's default fp32 needs no note
        run.notes.append("Precision here: {}; the CS-2 trains in {}.".format(steps.precision.why,
                                                                              accelerator.TESTBED_PRECISION["cs2"]))
    del model
    if getattr(device, "type", "") == "cuda":
        torch.cuda.empty_cache()
    return run

