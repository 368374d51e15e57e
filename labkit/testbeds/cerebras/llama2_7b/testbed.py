"""The exercise on a CS-3 user node: the course's params file with the student's changes, ``cszoo fit``, the log read.

    from labkit.testbeds.cerebras.llama2_7b.testbed import run_on_cs3
    run = run_on_cs3(config)       # config: batch_size, steps, sequence_length, learning_rate, model_size, ...

Step by step, as the course's llama2-7b.md does by hand: docs/cerebras.md, "On a CS-3 user node". A
fresh model dir each run, since an old checkpoint there would be resumed; an interrupt cancels the
wsjob with ``csctl cancel job`` and keeps the partial run (status ``interrupted``).

Verified only against the course's documentation and sample log: the tests run it against the
fakes tests/fakes/cszoo.py and csctl.py.
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from typing import Any, Callable, Optional

from labkit.interrupts import where
from labkit.results import Run
from labkit.testbeds.cerebras.llama2_7b.cszoo import COURSE_PARAMS, LLAMA_DIR, course_params_file, cszoo_command, \
    llama_dir, missing_data_dirs, params_values, run_cszoo, write_params_yaml
from labkit.testbeds.cerebras.llama2_7b.log import read_log
from labkit.testbeds.cerebras.llama2_7b.spec import EXERCISE

__all__ = ["run_on_cs3", "VENV_HINT"]

#: How the course makes ``cszoo`` available (05-AITestbed/Cerebras/README.md).
VENV_HINT = "source ~/R_2.6.0/venv_cerebras_pt/bin/activate (the course's Python 3.11 venv with modelzoo installed)"


def run_on_cs3(config: Any, modelzoo_dir: Optional[str] = None, workdir: Optional[str] = None,
               echo: Callable[[str], None] = print, course_file: str = COURSE_PARAMS) -> Run:
    """Train LLaMA-2-7B on the CS-3 with ``cszoo fit`` and return the run read from its log.

    ``config`` gives ``batch_size``, ``steps``, ``sequence_length``, ``learning_rate`` (None keeps
    the course's file), and may give ``log_steps``, ``seed``, ``modelzoo_dir``, ``params_template``
    (the file to start from) and ``model_dir`` (the checkpoints' folder, made unique per run).
    """
    modelzoo_dir = modelzoo_dir or _get(config, "modelzoo_dir")
    folder = llama_dir(modelzoo_dir)
    if folder is None:
        raise FileNotFoundError("no modelzoo checkout with {} was found (looked in {}): clone Cerebras/modelzoo at "
                                "Release_2.6.0 into ~/R_2.6.0 as the course does, or set LABKIT_MODELZOO".format(
                                    LLAMA_DIR, modelzoo_dir or "LABKIT_MODELZOO and ~/R_*/modelzoo"))
    if shutil.which("cszoo") is None:
        raise FileNotFoundError("cszoo is not on PATH: " + VENV_HINT)
    source = _get(config, "params_template") or course_params_file(modelzoo_dir, course_file)
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
                             seed=_get(config, "seed"))
    if log_steps is not None and _get(config, "log_steps") is None:
        edit.notes.append("log_steps = {}: the file's {} is more than the {} steps, so no rate would be logged "
                          "before the end.".format(log_steps, course["log_steps"], steps))
    changed = ", ".join("{} {} -> {}".format(key, old, new) for key, old, new in edit.changes) or "nothing"
    echo("Params: {} from {}; changed: {}.".format(params_rel, source, changed))
    for note in edit.notes:
        echo("NOTE: " + note)
    model_dir = "{}_bs{}_{}".format(_get(config, "model_dir") or "model_dir_llama2_7b", batch, stamp)
    command = cszoo_command(params_rel, model_dir)
    log_path = os.path.abspath(os.path.join(workdir or os.getcwd(), "llama2_7b_bs{}_{}.log".format(batch, stamp)))
    result = run_cszoo(command, folder, log_path, steps=int(steps or 0), echo=echo)
    try:
        run = read_log(log_path, config, sequence_length=edit.sequence_length)
    except LookupError:  # the log holds no run yet (stopped before the first line that opens one)
        if not result.interrupted:
            raise
        run = Run(EXERCISE, source="testbed", status="incomplete")
    run.source = "testbed"
    run.params.update({"batch_size": batch, "steps": steps, "sequence_length": edit.sequence_length})
    run.environment.update({"log_path": log_path, "params_path": os.path.join(folder, params_rel),
                            "params_source": source, "params_changes": [list(c) for c in edit.changes],
                            "command": command, "cwd": folder, "model_dir": os.path.join(folder, model_dir),
                            "wsjob_ids": list(result.job_ids)})
    run.notes.extend(edit.notes)
    if _get(config, "model_size") not in (None, "7b", "auto"):
        run.notes.append("model_size = {!r} is for portable runs: the CS-3 trains the course's LLaMA-2-7B.".format(
            config.model_size))
    if result.interrupted:
        cancelled = ("the wsjob {} was cancelled with csctl".format(", ".join(result.cancelled)) if result.cancelled
                     else "no wsjob was cancelled ({})".format(" ".join(result.messages)))
        # the log is the record: its last step may not have reached the progress bar before the interrupt
        last = max(result.last_step, int(run.metrics.get("steps") or 0))
        run.mark_interrupted(where(step=last or None, steps=steps),
                             "{}; its numbers are those of the last step logged.".format(cancelled))
        run.environment["cancelled_wsjobs"] = list(result.cancelled)
    elif result.status != 0:
        run.status = "failed"
        run.notes.append("cszoo exited with status {}; the log is {}.".format(result.status, log_path))
    return run


def _get(config: Any, name: str) -> Any:
    """``config.name``, or None when the config has no such parameter."""
    return getattr(config, name, None)
