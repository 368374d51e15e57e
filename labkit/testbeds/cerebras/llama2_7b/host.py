"""Where a LLaMA-2-7B run goes, and why: a CS-3 log, ``cszoo fit`` on a CS-3 user node, or the portable LLaMA.

    from labkit.testbeds.cerebras import llama2_7b
    llama2_7b.plan(config)          # Where: ... / Why: ...   (a labkit.plans.RunPlan)

A CS-3 user node is one where the ``cszoo`` command and a modelzoo checkout with the LLaMA
model are present (the course's ``~/R_2.6.0/modelzoo``). A portable run that would take
hours, or not fit in memory (LLaMA-2-7B at the course's batch on a laptop), is refused here,
in one line, with the estimated time and a run that fits.
"""

from __future__ import annotations

import os
import shutil
from typing import Any, List, Optional

from labkit import devices, llm
from labkit.params import Config, ParameterError
from labkit.plans import RunPlan, device_why
from labkit.testbeds.cerebras.llama2_7b.spec import EXERCISE, LONG_RUN_SECONDS, PORTABLE_DEFAULTS, effective

__all__ = ["plan", "cs3_node", "estimated_seconds", "LLAMA_DIRS", "CS3_HELP"]

#: Where the LLaMA model sits in a modelzoo checkout (Release 2.4 onwards).
LLAMA_DIRS = ("src/cerebras/modelzoo/models/nlp/llama",)

CS3_HELP = ("The CS-3 path runs the course's `cszoo fit configs/params_llama2_7b.yaml ...` on a Cerebras user node, in "
            "the course's virtual environment (`python3.11 -m venv ~/R_2.6.0/venv_cerebras_pt`, `pip install -e "
            "modelzoo` in a checkout of Release_2.6.0 under ~/R_2.6.0/modelzoo, or pass modelzoo_dir). Elsewhere use "
            "device='auto', 'cuda', 'mps' or 'cpu' (the portable LLaMA), or log_path to read a CS-3 log.")


def _modelzoos(modelzoo_dir: Optional[str]) -> List[str]:
    if modelzoo_dir:
        return [modelzoo_dir]
    found = [os.environ["LABKIT_MODELZOO"]] if os.environ.get("LABKIT_MODELZOO") else []
    home = os.path.expanduser("~")
    try:
        releases = sorted((d for d in os.listdir(home) if d.startswith("R_")), reverse=True)
    except OSError:
        releases = []
    return found + [os.path.join(home, d, "modelzoo") for d in releases]


def cs3_node(modelzoo_dir: Optional[str] = None) -> List[str]:
    """What a CS-3 run needs and is missing here, in words (an empty list on a CS-3 user node)."""
    missing = []
    if shutil.which("cszoo") is None:
        missing.append("no `cszoo` command on PATH (the modelzoo's CLI, installed by `pip install -e modelzoo`)")
    if not any(os.path.isdir(os.path.join(root, sub)) for root in _modelzoos(modelzoo_dir) for sub in LLAMA_DIRS):
        missing.append("no modelzoo checkout with {} (looked in {})".format(
            LLAMA_DIRS[0], modelzoo_dir or "LABKIT_MODELZOO and ~/R_*/modelzoo"))
    return missing


def estimated_seconds(model_size: str, batch_size: int, sequence_length: int, steps: int, device: Any) -> float:
    """A rough, deliberately optimistic time for a portable run: 6 x parameters x tokens of
    arithmetic (plus attention), at a speed typical of the device."""
    config = llm.model_config(model_size, portable_vocab(model_size))
    per_token = 6 * llm.parameter_count(model_size, config.vocab_size) + \
        12 * config.num_hidden_layers * config.hidden_size * sequence_length
    kind = getattr(device, "type", str(device))
    flops = {"cuda": 5e13, "mps": 5e12}.get(kind, 2e10 * (os.cpu_count() or 1))
    return per_token * batch_size * sequence_length * steps / flops


def portable_vocab(model_size: str) -> int:
    """The vocabulary a portable run of ``model_size`` trains with (the 7B keeps LLaMA-2's)."""
    return llm.LLAMA2_VOCAB_SIZE if model_size == "7b" else 2048


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size:
            return "{:.0f} {}".format(seconds / size, unit)
    return "{:.0f} seconds".format(seconds)


def _check_cost(config: Config, device: Any) -> None:
    values = effective(config, "portable")
    seconds = estimated_seconds(values["model_size"], values["batch_size"], values["sequence_length"],
                                values["steps"], device)
    needed = llm.training_bytes(values["model_size"], portable_vocab(values["model_size"]))
    memory = llm.available_memory_bytes()
    too_big = memory is not None and needed > memory
    if config.allow_long_run and not too_big or seconds <= LONG_RUN_SECONDS and not too_big:
        return
    memory_text = ", and needs about {:.0f} GiB of memory for {:.0f} GiB here".format(
        needed / 2**30, memory / 2**30) if too_big else ""
    raise ParameterError([
        "model_size = {!r}, batch_size = {}, sequence_length = {}, steps = {}: on {} this portable training would "
        "take about {}{} (a rough estimate); the CS-3 runs the course's 200 steps in about 2 hours. Allowed here: "
        "something smaller, e.g. model_size='small', batch_size={}, sequence_length={}, steps={}; or read a CS-3 log "
        "with log_path{}.".format(values["model_size"], values["batch_size"], values["sequence_length"],
                                  values["steps"], device, _duration(seconds), memory_text,
                                  PORTABLE_DEFAULTS["batch_size"], PORTABLE_DEFAULTS["sequence_length"],
                                  PORTABLE_DEFAULTS["steps"], "" if too_big else "; or set allow_long_run=True")],
        EXERCISE)


def plan(config: Config) -> RunPlan:
    """Decide where ``config`` runs, before anything runs (see the module docstring).

    ``device='CSX'`` without ``cszoo`` and the modelzoo raises :class:`labkit.devices.DeviceError`
    saying what is missing; a portable run that cannot finish in reasonable time raises
    ParameterError."""
    if config.log_path:
        return RunPlan("log", "reads the CS-3 log at {} (nothing is trained)".format(config.log_path),
                       "log_path is set: the run is read from that log")
    why = ""
    if config.device in ("CSX", "auto"):
        missing = cs3_node(config.modelzoo_dir)
        if not missing and config.model_size in ("auto", "7b"):
            return RunPlan("cs3", "the CS-3, with the course's `cszoo fit configs/params_llama2_7b.yaml`",
                           "device={!r}, and cszoo and the modelzoo's LLaMA are here".format(config.device),
                           device="CSX")
        if config.device == "CSX":
            problem = "; ".join(missing) or "model_size = {!r}: the CS-3 path trains the course's 7b".format(
                config.model_size)
            raise devices.DeviceError("device='CSX' was asked for, but {}. {}".format(problem, CS3_HELP))
        why = "no CS-3 here ({}); ".format("; ".join(missing)) if missing else "model_size={!r}; ".format(
            config.model_size)
    device = devices.torch_device("auto" if config.device in ("CSX", "auto") else config.device)
    _check_cost(config, device)
    values = effective(config, "portable")
    where = "portable PyTorch on {} ({}): LLaMA {} preset, batch {} x {} tokens, {} steps".format(
        device, devices.device_name(device), values["model_size"], values["batch_size"], values["sequence_length"],
        values["steps"])
    return RunPlan("portable", where, why + device_why("device", config.device, device), device=device)
