"""The CS-3 path of BERT-Large, as ALCF runs it with Release 2.10.0 (user-guides,
docs/ai-testbed/cerebras/example-programs.md, "BERT - PyTorch"):

    cd ~/R_2.10.0/modelzoo/src/cerebras/modelzoo/models/nlp/bert
    cp /software/cerebras/dataset/bert_large/bert_large_MSL128_sampleds.yaml configs/bert_large_MSL128_sampleds.yaml
    cszoo fit configs/bert_large_MSL128_sampleds.yaml --job_labels name=bert_pt --model_dir $MODEL_DIR |& tee mytest.log

labkit writes the copy with the run's choices (each run its own file and model dir, so an old checkpoint is
never resumed), adds the cluster's flags (``--num_csx``, ``--checkpoint_path``), runs it with
:func:`labkit.testbeds.cerebras.cszoo.run_cszoo` and reads the log with the reader the LLaMA log uses. The
modelzoo ships no ``bert_large_MSL128*.yaml`` since 2.6, so the course's file from /software (or
``params_template``) is the only start. Tested against the fake ``cszoo`` (tests/fakes/cszoo.py).
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from typing import Any, Callable, Dict, List, Optional, Tuple

import yaml

from labkit import bert
from labkit.files import write_atomic
from labkit.params import ParameterError
from labkit.results import Run
from labkit.testbeds.cerebras import candidate_modelzoos
from labkit.testbeds.cerebras.bert_large.metrics import read_log
from labkit.testbeds.cerebras.bert_large.spec import DEFAULT_TEMPLATE, EXERCISE
from labkit.testbeds.cerebras.cluster import cluster_flags, set_job_time
from labkit.testbeds.cerebras.cszoo import missing_data_dirs, record_ending, run_cszoo
from labkit.testbeds.cerebras.yaml_lines import put_scalar

__all__ = ["BERT_DIR", "LABEL", "cs3_missing", "bert_dir", "check_cs3_template", "write_trainer_yaml", "cs3_command",
           "run_on_cs3"]

#: Where BERT lives in a modelzoo checkout of Release 2.4 onwards; ``cszoo fit`` runs from there.
BERT_DIR = "src/cerebras/modelzoo/models/nlp/bert"
#: ALCF's job label for BERT.
LABEL = "name=bert_pt"

# The run's choices in the trainer layout (the modelzoo's models/nlp/bert/configs at 2.10).
_KEYS = {"batch_size": ("trainer", "fit", "train_dataloader", "batch_size"),
         "micro_batch_size": ("trainer", "fit", "train_dataloader", "micro_batch_size"),
         "max_steps": ("trainer", "init", "loop", "max_steps"),
         "log_steps": ("trainer", "init", "logging", "log_steps"),
         "checkpoint_steps": ("trainer", "init", "checkpoint", "steps"),
         "seed": ("trainer", "init", "seed")}
# A preset other than large: the model's sizes, under the modelzoo's names.
_MODEL = {"hidden_size": "hidden_size", "num_hidden_layers": "num_hidden_layers",
          "num_attention_heads": "num_heads", "intermediate_size": "filter_size"}


def cs3_missing(modelzoo_dir: Optional[str] = None) -> List[str]:
    """What a CS-3 run of BERT needs and is missing here, in words (empty on a CS-3 user node)."""
    missing = []
    if shutil.which("cszoo") is None:
        missing.append("no `cszoo` command on PATH (the modelzoo's CLI, installed by `pip install -e modelzoo`)")
    if bert_dir(modelzoo_dir) is None:
        missing.append("no modelzoo checkout with {} (looked in {})".format(
            BERT_DIR, modelzoo_dir or "LABKIT_MODELZOO and ~/R_*/modelzoo"))
    return missing


def bert_dir(modelzoo_dir: Optional[str] = None) -> Optional[Tuple[str, str]]:
    """(checkout, its BERT folder) of the first modelzoo with BERT at :data:`BERT_DIR`, or None."""
    for root in candidate_modelzoos(modelzoo_dir):
        folder = os.path.join(root, BERT_DIR)
        if os.path.isdir(folder):
            return os.path.abspath(root), os.path.abspath(folder)
    return None


def check_cs3_template(config: Any) -> str:
    """The params file a CS-3 run starts from (``params_template``, else the course's); ParameterError when there is
    none, it is not in the trainer layout, or its data is not made for ``max_seq_length``."""
    source = config.params_template or DEFAULT_TEMPLATE
    if not os.path.isfile(source):
        raise ParameterError(["params_template = None: {} does not exist (it does on ALCF's CS-3 user nodes; the "
                              "modelzoo ships no bert_large_MSL128 file since 2.6); give the path of a BERT params "
                              "file".format(source)], EXERCISE)
    with open(source) as f:
        params = yaml.safe_load(f) or {}
    if "trainer" not in params:
        raise ParameterError(["params_template = {!r}: the 2024 runconfig layout (train_input, runconfig); the CS-3 "
                              "path writes the trainer layout of Release 2.10 (trainer: init: ..., fit: ...), as "
                              "ALCF's /software copy has it".format(source)], EXERCISE)
    loader = _value(params, ("trainer", "fit", "train_dataloader")) or {}
    msl = loader.get("max_sequence_length") if isinstance(loader, dict) else None
    if msl is not None and msl != config.max_seq_length:
        raise ParameterError(["max_seq_length = {}: the data set of {} is preprocessed for sequences of {} tokens; "
                              "allowed on the CS-3 with this file: {}".format(config.max_seq_length, source, msl, msl)],
                             EXERCISE)
    return source


def write_trainer_yaml(config: Any, source: str, out_path: str) -> List[Tuple[str, Any, Any]]:
    """Copy ``source`` (a trainer-layout params file) to ``out_path`` with the run's choices, each changed on its
    line (every other byte kept); the (key, old, new) changes. ``checkpoint.steps`` is ``max_steps``: one
    checkpoint, at the end, as the course's runs save."""
    with open(source) as f:
        text = f.read()
    params = yaml.safe_load(text) or {}
    values: Dict[str, Any] = {"batch_size": config.batch_size, "max_steps": config.max_steps,
                              "log_steps": config.log_steps, "checkpoint_steps": config.max_steps, "seed": config.seed}
    if isinstance(config.micro_batch_size, int):
        values["micro_batch_size"] = config.micro_batch_size
    changes = []
    for name, value in values.items():
        old = _value(params, _KEYS[name])
        text, _ = put_scalar(text, _KEYS[name], value)
        if old != value:
            changes.append((".".join(_KEYS[name]), old, value))
    if config.model_size != "large":
        preset = bert.MODEL_SIZES[config.model_size]
        for ours, theirs in _MODEL.items():
            path = ("trainer", "init", "model", theirs)
            old = _value(params, path)
            text, _ = put_scalar(text, path, preset[ours])
            if old != preset[ours]:
                changes.append((".".join(path), old, preset[ours]))
    if config.job_time_sec is not None:
        text, old = set_job_time(text, config.job_time_sec)
        if old != config.job_time_sec:
            changes.append(("job_time_sec", old, config.job_time_sec))
    yaml.safe_load(text)  # the edit must leave a file the modelzoo can read
    write_atomic(out_path, text)
    return changes


def cs3_command(params_path: str, model_dir: str, config: Any) -> List[str]:
    """ALCF's ``cszoo fit PARAMS --job_labels name=bert_pt --model_dir MODEL_DIR`` and the cluster's flags."""
    return ["cszoo", "fit", params_path, "--job_labels", LABEL, "--model_dir", model_dir] + cluster_flags(config)


def run_on_cs3(config: Any, echo: Callable[[str], None] = print) -> Run:
    """Train BERT on the CS-3 with ``cszoo fit``; the run read from its log (kept in the notebook's folder)."""
    found = bert_dir(config.modelzoo_dir)
    if found is None:
        raise FileNotFoundError("; ".join(cs3_missing(config.modelzoo_dir)))
    root, folder = found
    source = check_cs3_template(config)
    with open(source) as f:
        text = f.read()
    missing = missing_data_dirs(text, folder)
    if missing:
        gone = "; ".join("{} = {} does not exist".format(key, path) for key, path in missing)
        raise FileNotFoundError("{}: {} (seen from {}, where cszoo runs): the modelzoo's config validation refuses a "
                                "params file whose data_dir is missing.".format(source, gone, folder))
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    name = os.path.splitext(os.path.basename(source))[0]
    params_rel = os.path.join("configs", "{}_bs{}_{}.yaml".format(name, config.batch_size, stamp))
    changes = write_trainer_yaml(config, source, os.path.join(folder, params_rel))
    changed = ", ".join("{} {} -> {}".format(key, old, new) for key, old, new in changes) or "nothing"
    echo("Params: {} from {}; changed: {}.".format(params_rel, source, changed))
    model_dir = os.path.join(os.path.abspath(config.model_dir), "bs{}-{}".format(config.batch_size, stamp))
    command = cs3_command(params_rel, model_dir, config)
    log_path = os.path.join(os.getcwd(), "cerebras-bert-bs{}-{}.log".format(config.batch_size, stamp))
    result = run_cszoo(command, folder, log_path, steps=config.max_steps, echo=echo)
    try:
        run = read_log(log_path, config)
    except LookupError:  # no run in the log: stopped (or refused) before its first line
        if not result.interrupted and result.status == 0:
            raise
        run = Run(EXERCISE, source="testbed", status="incomplete" if result.interrupted else "failed")
    run.source = "testbed"
    run.params.update({"num_csx": config.num_csx, "batch_size": config.batch_size})
    run.environment.update({"log_path": log_path, "params_path": os.path.join(folder, params_rel),
                            "params_source": source, "params_changes": [list(c) for c in changes],
                            "command": command, "cwd": folder, "modelzoo_dir": root, "model_dir": model_dir,
                            "wsjob_ids": list(result.job_ids)})
    record_ending(run, result, config.max_steps, log_path, echo)
    return run


def _value(params: Any, path: Tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(params, dict) or key not in params:
            return None
        params = params[key]
    return params
