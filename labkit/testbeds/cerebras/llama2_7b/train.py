"""The portable LLaMA's training run: the tokens, the model, the steps, the validation, the record.

The course's semantics are kept: ``batch_size`` sequences of ``sequence_length`` tokens a step,
``steps`` steps, a Cerebras 2.6 report line every ``log_steps`` (so the log reader reads both), measured
as the BERT loops are (:class:`labkit.bert.StepMeter`). Phases (:mod:`labkit.interrupts`): setup,
training, validation. An interrupt after the first step keeps the steps trained (and no validation
loss when it came before the validation's end); a second one in training drops the step in progress.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from labkit import accelerator, bert, devices, interrupts, llm
from labkit.params import Config
from labkit.progress import bar
from labkit.results import Run
from labkit.testbeds.cerebras.llama2_7b.metrics import METRICS, add_tokens_per_s
from labkit.testbeds.cerebras.llama2_7b.spec import EXERCISE, effective
from labkit.testbeds.cerebras.stream import echo_above, info_line, processed_line, train_line

__all__ = ["train", "VOCAB_SIZE", "VALIDATION_BATCHES"]

#: The portable tokenizer's vocabulary (LLaMA-2's 32,000 would make a small model mostly output layer).
VOCAB_SIZE = 2048

#: Held-out windows the validation loss is averaged over (a fixed, seeded set).
VALIDATION_BATCHES = 4


def train(config: Config, device: Any, steps: Optional[llm.LlamaStepPlan] = None,
          echo: Callable[[str], None] = print, progress: bool = True) -> Run:
    """Train the portable LLaMA as ``config`` says (None values: :data:`~.spec.PORTABLE_DEFAULTS`) on
    ``device`` with the preset, precision and checkpointing the plan chose (``steps``); the Run."""
    import torch

    values = effective(config, "portable")
    device = torch.device(device) if isinstance(device, str) else device
    if steps is None:
        precision = accelerator.resolve_precision(config.precision, accelerator.describe(device))
        steps = llm.LlamaStepPlan(values["model_size"], precision, False, float("nan"), "not measured")
    values["model_size"] = steps.model_size
    total, log_steps = values["steps"], values["log_steps"]
    batch_size, length, seed = values["batch_size"], values["sequence_length"], values["seed"]

    # the tokens and the model (their time, setup_s, is not in the rates)
    setup_start = time.perf_counter()
    corpus = llm.load_corpus(config.corpus)
    tokenizer = llm.corpus_tokenizer(corpus, VOCAB_SIZE)
    train_ids = llm.encode_text(tokenizer, corpus.train)
    on_gpu = device.type == "cuda"
    memory = accelerator.describe(device).memory_bytes if on_gpu else None
    model = llm.build_model(values["model_size"], vocab_size=len(tokenizer), max_seq_length=length, seed=seed,
                            memory_bytes=memory, device=device if on_gpu else None)
    batches = llm.token_batches(train_ids, batch_size, length, seed=seed)
    setup_s = time.perf_counter() - setup_start
    parameters = llm.count_parameters(model)
    echo(info_line("labkit portable LLaMA ({} preset, {:.1f}M parameters) on {}: batch size {} samples of {} "
                   "tokens, {} steps, corpus {!r} ({:,} training tokens)".format(
                       values["model_size"], parameters / 1e6, device, batch_size, length, total, corpus.name,
                       len(train_ids))))
    shown = bar(total=total, desc="batch {}".format(batch_size), unit="step") if progress else None
    above = echo_above(shown, echo) if shown is not None else echo
    label = device.type.upper()

    # the steps: from here an interrupt ends training at a step boundary, and the steps made are kept
    trained = bert.TrainResult(batch_size=batch_size, steps=total, device=str(device))
    stop = interrupts.keep(lambda: _record(config, values, device, steps, trained, setup_s, float("nan"), parameters,
                                           corpus) if trained.total_time > 0 and trained.losses else None)
    stop.phase("training", check=False)
    model.to(device)
    if steps.checkpointing:  # keep each layer's input, recompute the rest in backward: what lets 7B fit one GPU
        model.gradient_checkpointing_enable()
        model.config.use_cache = False
    optimizer = llm.make_optimizer(model, values["learning_rate"])
    scheduler = llm.warmup_scheduler(optimizer, total)
    if on_gpu:
        torch.cuda.reset_peak_memory_stats(device)
    meter = bert.StepMeter(trained, total, log_steps, device, bert.RateTracker(), "warmup_time", bert.LogEntry)
    try:
        for step in range(1, total + 1):
            batch = next(batches)
            loss = llm.train_step(model, batch, optimizer, device, scheduler, precision=steps.precision)
            report = meter.add(step, len(batch["input_ids"]), loss)
            if report is not None:
                above(train_line(label, step, report.loss, report.rate, report.global_rate,
                                 remaining_s=report.elapsed / step * (total - step)))
            if shown is not None:
                shown.update(1)
            if meter.diverged or stop.requested and step < total:
                break  # diverged (the record says so), or an interrupt: end at this step boundary
    except KeyboardInterrupt as exc:  # a second interrupt: the step in progress is dropped
        if not stop.interrupted_by(exc):
            raise
    finally:
        if shown is not None:
            shown.close()
    meter.end(stop)
    if on_gpu:
        trained.peak_memory_bytes = int(torch.cuda.max_memory_allocated(device))

    # validation: the mean loss of VALIDATION_BATCHES held-out windows, a fixed seeded set
    stop.phase("validation", check=False)  # its lines below say what was trained
    if trained.interrupted:
        echo(trained.interrupted)
    elif len(trained.losses) == total:
        echo(info_line("Training completed successfully!"))
    echo(processed_line(trained.total_samples, trained.total_time, training=True))
    validation = float("nan")
    validation_ids = llm.encode_text(tokenizer, corpus.validation)
    if trained.losses and len(validation_ids) > length:
        held_out = llm.token_batches(validation_ids, min(batch_size, 8), length, seed=seed + 1)
        model.eval()
        losses = []
        with steps.precision.autocast(device), torch.no_grad():
            for _ in range(VALIDATION_BATCHES):
                stop.check()  # an interrupt ends the run here, kept without a validation loss
                ids = next(held_out)["input_ids"].to(device)
                losses.append(float(model(input_ids=ids, labels=ids).loss))
        validation = sum(losses) / len(losses)
    return _record(config, values, device, steps, trained, setup_s, validation, parameters, corpus)


def _record(config: Config, values: dict, device: Any, steps: llm.LlamaStepPlan, trained: bert.TrainResult,
            setup_s: float, validation: float, parameters: int, corpus: Any) -> Run:
    run = Run(exercise=EXERCISE, source="portable", params=config.to_dict())
    run.params.update(values)
    run.params["device"] = str(device)
    run.params["precision"] = steps.precision.name
    bert.record_steps(run, trained)
    logs = trained.logs
    if logs:
        METRICS.add(run, "global_rate", round(logs[-1].global_rate, 3))
        METRICS.add(run, "last_rate", round(logs[-1].rate, 3))
        METRICS.add(run, "min_rate", round(min(r.rate for r in logs), 3))
        METRICS.add(run, "max_rate", round(max(r.rate for r in logs), 3))
        METRICS.add(run, "final_loss", round(logs[-1].loss, 5))
        METRICS.add(run, "steps", logs[-1].step)
        add_tokens_per_s(run, values["sequence_length"])
    elif trained.losses:  # interrupted before the first report: the steps it made still count
        METRICS.add(run, "final_loss", round(trained.losses[-1], 5))
        METRICS.add(run, "steps", len(trained.losses))
    METRICS.add(run, "samples", trained.total_samples)
    METRICS.add(run, "train_seconds", round(trained.total_time, 4))
    if trained.total_time > 0:
        METRICS.add(run, "samples_per_s", round(trained.total_samples / trained.total_time, 3))
    METRICS.add(run, "first_step_s", round(trained.warmup_time, 4))
    if trained.steady_seconds > 0:
        METRICS.add(run, "steady_rate", round(trained.steady_samples / trained.steady_seconds, 3))
    METRICS.add(run, "build_s", round(setup_s, 4))
    if validation == validation:  # not NaN
        METRICS.add(run, "validation_loss", round(validation, 5))
    METRICS.add(run, "parameters", parameters)
    how = {"micro_batch": values["batch_size"], "accumulation": 1, "launch": "eager",
           "checkpointing": steps.checkpointing}
    if trained.peak_memory_bytes is not None:
        how["peak_memory_bytes"] = trained.peak_memory_bytes
        preset, length = llm.MODEL_SIZES[values["model_size"]], values["sequence_length"]
        per_token = 6.0 * parameters + 12.0 * preset["num_hidden_layers"] * preset["hidden_size"] * length
        bert.add_gpu_metrics(run, METRICS, trained.peak_memory_bytes, per_token * length, device)
    run.environment = devices.environment(device, dict(how, parameters=parameters, corpus=corpus.name,
                                                       corpus_fingerprint=corpus.fingerprint))
    shapes = ("LLaMA-2-7B's layers, its 32,000-token vocabulary cut to the tokenizer's" if values["model_size"] == "7b"
              else "LLaMA-2's architecture, not its 7 billion parameters")
    # a CPU's default fp32 needs no word on precision
    precision = "" if device.type == "cpu" and steps.precision.name == "fp32" else ", precision " + steps.precision.name
    size = "{:.1f}M".format(parameters / 1e6) if parameters < 1e9 else "{:.1f}B".format(parameters / 1e9)
    run.notes.append(
        "Portable run: a {}-parameter LLaMA ({} preset, {}) on {}, trained on {!r} text with a {}-token tokenizer{}; "
        "not the CS-3. Rate and GlobalRate follow the modelzoo's definitions.".format(
            size, values["model_size"], shapes, device, corpus.name, VOCAB_SIZE, precision))
    if precision:
        run.notes.append("The CS-3 trains in {}.".format(accelerator.TESTBED_PRECISION["cs3"]))
    if trained.losses:
        run.notes.append(
            "The first step took {:.2f} s (memory allocation, kernel choice; the portable warm-up, not a compile): it "
            "counts in GlobalRate as the CS-3's first steps do. Building the tokenizer and model ({:.1f} s) does not; "
            "nothing here stands for the CS-3's compile, appliance staging or checkpoint save.".format(
                trained.warmup_time, setup_s))
    return run
