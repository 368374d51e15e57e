"""The CS-2 path, the 2024 course's way (a modelzoo before 2.10, where ``run.py`` is not yet deprecated; on a CS-3
with 2.10 the exercise runs ``cszoo fit``, :mod:`.cs3`): what of the Cerebras stack is here, the modelzoo's params
YAML, the course's ``python run.py CSX ...`` command, the run.

Looking for the stack imports none of it; :func:`labkit.testbeds.cerebras.bert_large.plan` decides
from it where a run goes. Verified only on the testbed; here it is tested against a fake ``run.py``
that prints the real log format (tests/fakes/cerebras_run.py).
"""

from __future__ import annotations

import getpass
import os
import shlex
import sys
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Dict, List, Optional, Sequence

import yaml

from labkit import bert, devices
from labkit.params import Config, ParameterError
from labkit.progress import bar
from labkit.results import Run
from labkit.testbeds.cerebras import candidate_modelzoos
from labkit.testbeds.cerebras.bert_large.metrics import read_log
from labkit.testbeds.cerebras.bert_large.spec import DEFAULT_TEMPLATE, EXERCISE
from labkit.testbeds.cerebras.stream import echo_above, step_of, stream_command

__all__ = ["CerebrasStack", "cerebras_stack", "template_path", "check_template", "write_params_yaml",
           "modelzoo_command", "run_modelzoo"]

# Where run.py for BERT sits in the modelzoo, by release (R_1.9-2.3, then 2.4 onwards).
_BERT_DIRS = ("modelzoo/transformers/pytorch/bert", "src/cerebras/modelzoo/models/nlp/bert",
              "transformers/pytorch/bert")


@dataclass
class CerebrasStack:
    """What of the Cerebras stack is here: ``missing`` lists what is not, in words (empty: all of it)."""

    modelzoo_dir: Optional[str]
    bert_dir: Optional[str]
    missing: List[str] = field(default_factory=list)


def cerebras_stack(modelzoo_dir: Optional[str] = None) -> CerebrasStack:
    """Look for ``cerebras_pytorch`` and a modelzoo checkout with BERT's ``run.py`` (imports nothing)."""
    missing = []
    if not (devices.module_available("cerebras_pytorch") or devices.module_available("cerebras.pytorch")):
        missing.append("the cerebras_pytorch package is not importable in this Python ({})".format(sys.executable))
    root = bert_dir = None
    found = next(((candidate, sub) for candidate in candidate_modelzoos(modelzoo_dir) for sub in _BERT_DIRS
                  if os.path.isfile(os.path.join(candidate, sub, "run.py"))), None)
    if found:
        root, bert_dir = os.path.abspath(found[0]), os.path.abspath(os.path.join(*found))
    else:
        missing.append("no modelzoo checkout with BERT's run.py was found (looked in {} for {})".format(
            modelzoo_dir or "LABKIT_MODELZOO or ~/R_*/modelzoo", " or ".join(s + "/run.py" for s in _BERT_DIRS[:2])))
    return CerebrasStack(root, bert_dir, missing)


def template_path(config: Config, stack: Optional[CerebrasStack]) -> Optional[str]:
    """The params YAML a CS-2 run starts from: ``params_template``, else the course's
    :data:`DEFAULT_TEMPLATE`, else the modelzoo's ``configs/bert_large_MSL128*.yaml``; None if none is here."""
    if config.params_template:
        return config.params_template
    if os.path.isfile(DEFAULT_TEMPLATE):
        return DEFAULT_TEMPLATE
    if stack is not None and stack.bert_dir:
        for name in ("bert_large_MSL128_sampleds.yaml", "bert_large_MSL128.yaml", "bert_large_msl128.yaml"):
            path = os.path.join(stack.bert_dir, "configs", name)
            if os.path.isfile(path):
                return path
    return None


def check_template(config: Config, stack: CerebrasStack) -> None:
    """ParameterError when there is no params YAML, or its data set is not made for ``max_seq_length``."""
    template = template_path(config, stack)
    if template is None:
        raise ParameterError(["params_template = None: no params YAML found ({} is absent and the modelzoo has no "
                              "configs/bert_large_MSL128*.yaml); give the path of one".format(DEFAULT_TEMPLATE)], EXERCISE)
    with open(template) as f:
        params = yaml.safe_load(f) or {}
    msl = (params.get("train_input") or {}).get("max_sequence_length")
    if msl is not None and msl != config.max_seq_length:
        raise ParameterError(["max_seq_length = {}: the data set of {} is preprocessed for sequences of {} tokens; "
                              "allowed on the CS-2 with this template: {}".format(config.max_seq_length, template, msl, msl)],
                             EXERCISE)


def write_params_yaml(config: Config, template: str, out_path: str) -> Dict[str, Any]:
    """Write the modelzoo params file for ``config``: ``template`` with the run's choices (which keys:
    docs/cerebras.md, "The modelzoo path"; ``checkpoint_steps`` = max_steps, one checkpoint at the end,
    as the course's runs save); the params written."""
    with open(template) as f:
        params = yaml.safe_load(f) or {}
    train_input = params.setdefault("train_input", {})
    train_input["batch_size"] = config.batch_size
    if config.micro_batch_size is not None:
        train_input["micro_batch_size"] = config.micro_batch_size
    runconfig = params.setdefault("runconfig", {})
    runconfig.update({"max_steps": config.max_steps, "log_steps": config.log_steps,
                      "checkpoint_steps": config.max_steps, "seed": config.seed})
    if getattr(config, "job_time_sec", None) is not None:
        runconfig["job_time_sec"] = config.job_time_sec
    if config.model_size != "large":  # the preset under the modelzoo's ``model:`` keys
        preset = bert.MODEL_SIZES[config.model_size]
        params.setdefault("model", {}).update({
            "hidden_size": preset["hidden_size"], "num_hidden_layers": preset["num_hidden_layers"],
            "num_heads": preset["num_attention_heads"], "filter_size": preset["intermediate_size"]})
    with open(out_path, "w") as f:
        yaml.safe_dump(params, f, sort_keys=False)
    return params


def modelzoo_command(params_path: str, model_dir: str, modelzoo_dir: str, python: Optional[str] = None,
                     num_csx: int = 1, num_workers_per_csx: int = 1, mount_dirs: Sequence[str] = ("/home/", "/software/"),
                     compile_dir: Optional[str] = None, job_label: str = "name=bert_pt",
                     mode: str = "train") -> List[str]:
    """The course's ``run.py CSX`` command with ``--num_csx=1`` said out loud, as an argument list (run it
    from BERT's folder); the flags: docs/cerebras.md, "The modelzoo path"."""
    if num_csx < 1 or num_workers_per_csx < 1:
        raise ValueError("num_csx and num_workers_per_csx must be at least 1")
    if compile_dir is None:
        try:
            compile_dir = getpass.getuser()
        except Exception:  # no user name in some containers
            compile_dir = "labkit"
    return [python or sys.executable, "run.py", "CSX",
            "--job_labels", job_label,
            "--params", params_path,
            "--num_csx={}".format(num_csx),
            "--num_workers_per_csx={}".format(num_workers_per_csx),
            "--mode", mode,
            "--model_dir", model_dir,
            "--mount_dirs", *mount_dirs,
            "--python_paths", modelzoo_dir,
            "--compile_dir", compile_dir]


def run_modelzoo(config: Config, stack: CerebrasStack, echo: Callable[[str], None] = print) -> Run:
    """Train on the CS-2: params file, ``run.py CSX``, live log (the params file and the log in the current
    folder, the notebook's), metrics read from the log."""
    template = template_path(config, stack)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    workdir = os.getcwd()
    params_path = os.path.join(workdir, "params_bert_{}_bs{}_{}.yaml".format(config.model_size, config.batch_size, stamp))
    write_params_yaml(config, template, params_path)
    model_dir = os.path.join(os.path.abspath(config.model_dir), "bs{}-{}".format(config.batch_size, stamp))
    command = modelzoo_command(params_path, model_dir, stack.modelzoo_dir, num_csx=config.num_csx)
    if config.checkpoint_path:
        command += ["--checkpoint_path", os.path.abspath(config.checkpoint_path)]
    log_path = os.path.join(workdir, "cerebras-bert-bs{}-{}.log".format(config.batch_size, stamp))
    echo("$ cd {} && {}".format(stack.bert_dir, " ".join(shlex.quote(c) for c in command)))
    progress = bar(total=config.max_steps, desc="CS-2 steps", unit="step")
    done = [0]

    def on_line(line: str) -> None:
        step = step_of(line)
        if step is not None and step > done[0]:
            progress.update(step - done[0])
            done[0] = step

    try:
        status = stream_command(command, stack.bert_dir, log_path, echo=echo_above(progress, echo), on_line=on_line)
    finally:
        progress.close()
    run = read_log(log_path, config)
    run.source = "testbed"
    run.environment.update({"log_path": log_path, "params_path": params_path, "command": command,
                            "modelzoo_dir": stack.modelzoo_dir})
    if status != 0 and run.status == "complete":
        run.status = "failed"
    if status != 0:
        run.notes.append("run.py exited with status {}; the log is {}.".format(status, log_path))
    return run
