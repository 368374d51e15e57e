"""The CS-3 path (modelzoo Release 2.10.0, ALCF's in 2026; the 2025 course's 2.6 runs the same commands): is
this a CS-3 user node, the course's params YAML with the student's changes, ``cszoo fit``, ``csctl cancel job`` on an interrupt, the log read (:func:`run_on_cs3`).

The course's commands (05-AITestbed/Cerebras/llama2-7b.md) and what labkit does with them, step by step:
docs/cerebras.md, "On a CS-3 user node". The params file is edited line by line
(:mod:`labkit.testbeds.cerebras.yaml_lines`). Verified only on the testbed's documentation and sample log; here it
is tested against the fakes tests/fakes/cszoo and tests/fakes/csctl.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import yaml

from labkit.results import Run
from labkit.testbeds.cerebras import candidate_modelzoos
from labkit.testbeds.cerebras.cluster import cluster_flags, set_job_time
from labkit.testbeds.cerebras.cszoo import CszooResult, cancel_job, missing_data_dirs, record_ending, run_cszoo
from labkit.testbeds.cerebras.release import CHECKED_RELEASE, setup_commands
from labkit.testbeds.cerebras.yaml_lines import find_keys, key_paths, set_scalar
from labkit.testbeds.cerebras.llama2_7b.metrics import read_log
from labkit.testbeds.cerebras.llama2_7b.spec import EXERCISE

__all__ = ["COURSE_PARAMS", "LLAMA_DIR", "CS3_HELP", "VENV_HINT", "ParamsEdit", "CszooResult", "cs3_node",
           "modelzoo_root", "llama_dir",
           "course_params_file", "write_params_yaml", "params_values", "missing_data_dirs", "cszoo_command",
           "cancel_job", "run_cszoo", "run_on_cs3"]

#: The params file the course copies over the modelzoo's (it exists on the CS-3 user nodes only).
COURSE_PARAMS = "/software/cerebras/dataset/params_llama2_7b.yaml"
#: Where LLaMA lives in a modelzoo checkout of Release 2.4 onwards; ``cszoo fit`` runs from there.
LLAMA_DIR = "src/cerebras/modelzoo/models/nlp/llama"

CS3_HELP = ("The CS-3 path runs the course's `cszoo fit configs/params_llama2_7b.yaml ...` on a Cerebras user node, in "
            "a venv of Release {r} as ALCF documents it (`{setup}`; or pass modelzoo_dir). Elsewhere use "
            "device='auto', 'cuda', 'mps' or 'cpu' (the portable LLaMA), or log_path to read a CS-3 log.".format(
                r=CHECKED_RELEASE, setup=setup_commands()))
#: How ALCF makes ``cszoo`` available (user-guides, docs/ai-testbed/cerebras/customizing-environment.md).
VENV_HINT = ("source ~/R_{r}/venv_cerebras_pt/bin/activate (ALCF's Python 3.11 venv with the modelzoo installed; "
             "to make it: {setup})".format(r=CHECKED_RELEASE, setup=setup_commands()))

# Each setting's key path, in the 2.6 "trainer" layout and in the older "runconfig" layout.
_KEYS: Dict[str, Tuple[Tuple[str, ...], ...]] = {
    "batch_size": (("trainer", "fit", "train_dataloader", "batch_size"), ("train_input", "batch_size")),
    "steps": (("trainer", "init", "loop", "max_steps"), ("runconfig", "max_steps")),
    "sequence_length": (("trainer", "fit", "train_dataloader", "max_sequence_length"),
                        ("train_input", "max_sequence_length")),
    "model_length": (("trainer", "init", "model", "max_position_embeddings"), ("model", "max_position_embeddings")),
    "log_steps": (("trainer", "init", "logging", "log_steps"), ("runconfig", "log_steps")),
    "seed": (("trainer", "init", "seed"), ("runconfig", "seed")),
}
# An optimizer's own learning rate (a constant), then schedules (every *learning_rate under them).
_LR_SCALAR = ("optimizer", "learning_rate")
_LR_SCHEDULES = (("trainer", "init", "schedulers"), ("optimizer", "learning_rate"))


@dataclass
class ParamsEdit:
    """What :func:`write_params_yaml` changed: (key path, old value, new value), and what it kept and why."""

    source: str
    changes: List[Tuple[str, Any, Any]] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    sequence_length: Optional[int] = None  # the run's, as the written file gives it


def cs3_node(modelzoo_dir: Optional[str] = None) -> List[str]:
    """What a CS-3 run needs and is missing here, in words (an empty list on a CS-3 user node)."""
    missing = []
    if shutil.which("cszoo") is None:
        missing.append("no `cszoo` command on PATH (the modelzoo's CLI, installed by `pip install -e modelzoo`)")
    if not any(os.path.isdir(os.path.join(root, LLAMA_DIR)) for root in candidate_modelzoos(modelzoo_dir)):
        missing.append("no modelzoo checkout with {} (looked in {})".format(
            LLAMA_DIR, modelzoo_dir or "LABKIT_MODELZOO and ~/R_*/modelzoo"))
    return missing


def modelzoo_root(modelzoo_dir: Optional[str] = None) -> Optional[str]:
    """The modelzoo checkout :func:`cs3_node` finds (the first with the LLaMA folder), or None."""
    return next((root for root in candidate_modelzoos(modelzoo_dir) if os.path.isdir(os.path.join(root, LLAMA_DIR))),
                None)


def llama_dir(modelzoo_dir: Optional[str] = None) -> Optional[str]:
    """The modelzoo's LLaMA folder (``.../models/nlp/llama``), found as the CS-2 path finds the modelzoo."""
    for candidate in candidate_modelzoos(modelzoo_dir):
        folder = os.path.join(candidate, LLAMA_DIR)
        if os.path.isdir(os.path.join(folder, "configs")):
            return os.path.abspath(folder)
    return None


def course_params_file(modelzoo_dir: Optional[str] = None, course_file: str = COURSE_PARAMS) -> str:
    """The course's params file when it exists, else the modelzoo's ``configs/params_llama2_7b.yaml``."""
    if os.path.isfile(course_file):
        return course_file
    folder = llama_dir(modelzoo_dir)
    own = os.path.join(folder, "configs", "params_llama2_7b.yaml") if folder else None
    if own and os.path.isfile(own):
        return own
    raise FileNotFoundError("no LLaMA-2-7B params file: {} does not exist (it does on a CS-3 user node) and {}".format(
        course_file, "{} does not either".format(own) if own else
        "no modelzoo with {} was found (looked in {})".format(LLAMA_DIR, modelzoo_dir or
                                                              "LABKIT_MODELZOO and ~/R_*/modelzoo")))


def _value(params: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(params, dict) or key not in params:
            return None
        params = params[key]
    return params


def params_values(text: str) -> Dict[str, Any]:
    """batch_size, steps, log_steps, seed, sequence_length (or the model's length) and learning_rate as a params
    text gives them (a name it does not give is left out)."""
    params = yaml.safe_load(text) or {}
    found: Dict[str, Any] = {}
    for name, paths in _KEYS.items():
        for path in paths:
            value = _value(params, path)
            if value is not None:
                found[name] = value
                break
    rates = _schedule_rates(text)
    scalar = _value(params, _LR_SCALAR)
    if isinstance(scalar, (int, float)):
        found["learning_rate"] = scalar
    elif rates:
        found["learning_rate"] = max(value for _, value in rates)
    return found


def _schedule_rates(text: str) -> List[Tuple[int, float]]:
    """(line, value) of every ``*learning_rate: number`` inside a schedule (or an optimizer's own)."""
    found = []
    for number, keys, value in key_paths(text):
        inside = any(keys[:len(p)] == p and len(keys) > len(p) for p in _LR_SCHEDULES)
        optimizer_own = len(keys) == 5 and keys[:3] == ("trainer", "init", "optimizer") and keys[-1] == "learning_rate"
        if (inside and keys[-1].endswith("learning_rate")) or optimizer_own:
            try:
                found.append((number, float(value.split("#")[0])))
            except ValueError:
                continue
    return found


def _set(text: str, edit: ParamsEdit, name: str, value: Any) -> str:
    for path in _KEYS[name]:
        lines = find_keys(text, path)
        if lines:
            old = params_values(text).get(name)
            if old != value:
                for line in lines:
                    text = set_scalar(text, line, value)
                edit.changes.append((".".join(path), old, value))
            return text
    raise ValueError("{}: no {} to change (looked for {})".format(
        edit.source, name, " or ".join(".".join(p) for p in _KEYS[name])))


def write_params_yaml(source: str, out_path: str, batch_size: Optional[int] = None, steps: Optional[int] = None,
                      sequence_length: Optional[int] = None, learning_rate: Optional[float] = None,
                      log_steps: Optional[int] = None, seed: Optional[int] = None,
                      job_time_sec: Optional[int] = None) -> ParamsEdit:
    """Copy ``source`` to ``out_path`` with only the student's changes (None: keep the file's value).
    ``learning_rate`` sets an optimizer's own rate, or scales a schedule so that its peak is
    ``learning_rate``; a file without ``max_sequence_length`` keeps the model's length (and says so);
    ``job_time_sec`` is added when the file has no time limit."""
    with open(source) as f:
        text = f.read()
    edit = ParamsEdit(source=source)
    settings = {"batch_size": batch_size, "steps": steps, "log_steps": log_steps, "seed": seed}
    for name, value in settings.items():
        if value is not None:
            text = _set(text, edit, name, int(value))
    values = params_values(text)
    edit.sequence_length = values.get("sequence_length") or values.get("model_length")
    if sequence_length is not None and sequence_length != edit.sequence_length:
        if "sequence_length" in values:
            text = _set(text, edit, "sequence_length", int(sequence_length))
            edit.sequence_length = int(sequence_length)
        else:
            edit.notes.append("sequence_length = {}: {} sets no max_sequence_length (its data was tokenised at the "
                              "model's {} tokens), so the CS-3 run keeps {}.".format(
                                  sequence_length, os.path.basename(source), edit.sequence_length,
                                  edit.sequence_length))
    if learning_rate is not None:
        text = _set_learning_rate(text, edit, float(learning_rate))
    if job_time_sec is not None:
        text, old = set_job_time(text, job_time_sec)
        if old != job_time_sec:
            edit.changes.append(("job_time_sec", old, int(job_time_sec)))
    yaml.safe_load(text)  # the edit must leave a file the modelzoo can read
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        f.write(text)
    return edit


def _set_learning_rate(text: str, edit: ParamsEdit, rate: float) -> str:
    old = _value(yaml.safe_load(text) or {}, _LR_SCALAR)
    if isinstance(old, (int, float)):
        if old != rate:
            text = set_scalar(text, find_keys(text, _LR_SCALAR)[0], rate)
            edit.changes.append((".".join(_LR_SCALAR), old, rate))
        return text
    rates = _schedule_rates(text)
    peak = max((value for _, value in rates), default=0.0)
    if peak <= 0:
        raise ValueError("learning_rate = {}: {} has no learning rate labkit can set (no optimizer learning_rate and "
                         "no schedule with one); set learning_rate = None to keep the file's".format(rate, edit.source))
    if peak != rate:
        for number, value in rates:
            new = value * rate / peak
            text = set_scalar(text, number, float("{:.6g}".format(new)))
        edit.changes.append(("learning rate schedule (peak)", peak, rate))
        edit.notes.append("The learning rate is a schedule in {}: every rate in it was scaled by {:.6g} so that its peak "
                          "is {} (its shape kept); {} lines changed.".format(
                              os.path.basename(edit.source), rate / peak, rate, len(rates)))
    return text


def cszoo_command(params_path: str, model_dir: str = "model_dir_llama2_7b", label: str = "name=llama2_7b",
                  flags: Sequence[str] = ()) -> List[str]:
    """The course's command: ``cszoo fit PARAMS --job_labels LABEL --model_dir MODEL_DIR`` and ``flags``
    (:func:`labkit.testbeds.cerebras.cluster.cluster_flags`)."""
    return ["cszoo", "fit", params_path, "--job_labels", label, "--model_dir", model_dir] + list(flags)


def run_on_cs3(config: Any, modelzoo_dir: Optional[str] = None, workdir: Optional[str] = None,
               echo: Callable[[str], None] = print) -> Run:
    """Train LLaMA-2-7B on the CS-3 with ``cszoo fit`` and return the run read from its log; ``config``'s
    None values keep the course's file, a parameter it lacks counts as None."""
    modelzoo_dir = modelzoo_dir or _get(config, "modelzoo_dir")
    folder = llama_dir(modelzoo_dir)
    if folder is None:
        raise FileNotFoundError("no modelzoo checkout with {} was found (looked in {}): set it up as ALCF does ({}), "
                                "or set LABKIT_MODELZOO".format(LLAMA_DIR, modelzoo_dir or "LABKIT_MODELZOO and "
                                                                "~/R_*/modelzoo", setup_commands()))
    if shutil.which("cszoo") is None:
        raise FileNotFoundError("cszoo is not on PATH: " + VENV_HINT)
    source = _get(config, "params_template") or course_params_file(modelzoo_dir)
    with open(source) as f:
        text = f.read()
    missing = missing_data_dirs(text, folder)
    if missing:
        raise FileNotFoundError("{}: {} (seen from {}, where cszoo runs): the modelzoo's config validation refuses a "
                                "params file whose data_dir is missing. Use the course's {} (on the CS-3 user nodes) or "
                                "set params_template to a file whose data_dir exists.".format(
                                    source, "; ".join("{} = {} does not exist".format(key, path) for key, path in missing),
                                    folder, COURSE_PARAMS))
    course = params_values(text)
    steps = _get(config, "steps") or course.get("steps")
    log_steps = _get(config, "log_steps")
    if log_steps is None and steps and course.get("log_steps", 0) > steps:
        log_steps = steps  # else a short run would print no Train line before its last step
    batch = _get(config, "batch_size") or course.get("batch_size")
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    params_rel = os.path.join("configs", "params_llama2_7b_bs{}_s{}_{}.yaml".format(batch, steps, stamp))
    edit = write_params_yaml(source, os.path.join(folder, params_rel), batch_size=_get(config, "batch_size"),
                             steps=_get(config, "steps"), sequence_length=_get(config, "sequence_length"),
                             learning_rate=_get(config, "learning_rate"), log_steps=log_steps,
                             seed=_get(config, "seed"), job_time_sec=_get(config, "job_time_sec"))
    if log_steps is not None and _get(config, "log_steps") is None:
        edit.notes.append("log_steps = {}: the file's {} is more than the {} steps, so no rate would be logged "
                          "before the end.".format(log_steps, course["log_steps"], steps))
    changed = ", ".join("{} {} -> {}".format(key, old, new) for key, old, new in edit.changes) or "nothing"
    echo("Params: {} from {}; changed: {}.".format(params_rel, source, changed))
    for note in edit.notes:
        echo("NOTE: " + note)
    model_dir = "{}_bs{}_{}".format(_get(config, "model_dir") or "model_dir_llama2_7b", batch, stamp)
    command = cszoo_command(params_rel, model_dir, flags=cluster_flags(config))
    log_path = os.path.abspath(os.path.join(workdir or os.getcwd(), "llama2_7b_bs{}_{}.log".format(batch, stamp)))
    result = run_cszoo(command, folder, log_path, steps=int(steps or 0), echo=echo)
    try:
        run = read_log(log_path, config, sequence_length=edit.sequence_length)
    except LookupError:  # the log holds no run yet (stopped before the first line that opens one)
        if not result.interrupted and result.status == 0:
            raise
        run = Run(EXERCISE, source="testbed", status="incomplete" if result.interrupted else "failed")
    run.source = "testbed"
    run.params.update({"batch_size": batch, "steps": steps, "sequence_length": edit.sequence_length,
                       "num_csx": _get(config, "num_csx") or 1})
    run.environment.update({"log_path": log_path, "params_path": os.path.join(folder, params_rel),
                            "params_source": source, "params_changes": [list(c) for c in edit.changes],
                            "command": command, "cwd": folder, "model_dir": os.path.join(folder, model_dir),
                            "wsjob_ids": list(result.job_ids)})
    run.notes.extend(edit.notes)
    if _get(config, "model_size") not in (None, "7b", "auto"):
        run.notes.append("model_size = {!r} is for portable runs: the CS-3 trains the course's LLaMA-2-7B.".format(
            config.model_size))
    record_ending(run, result, steps, log_path, echo)
    return run


def _get(config: Any, name: str) -> Any:
    return getattr(config, name, None)
