"""Where a run goes: what of the Cerebras stack is on this host, and the :class:`Plan` made from it.

    from labkit.testbeds import cerebras
    cerebras.cerebras_stack()            # CerebrasStack: cerebras_pytorch? a modelzoo with BERT's run.py?
    chosen = cerebras.plan(config)       # "log", "modelzoo" (the CS-2) or "portable" (a torch device)
    print(chosen.describe())

Nothing here imports the Cerebras stack; it only looks for it. A portable run that would
take hours is refused before it starts (see ``allow_long_run``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence

from labkit import bert, devices
from labkit.params import Config, ParameterError
from labkit.plans import PlanText, device_why
from labkit.testbeds.cerebras.spec import CEREBRAS_HELP, DEFAULT_TEMPLATE, EXERCISE, LONG_RUN_SECONDS

__all__ = ["CerebrasStack", "cerebras_stack", "candidate_modelzoos", "template_path", "check_template", "Plan", "plan",
           "estimated_seconds"]


# Where run.py for BERT sits in the modelzoo, by release (R_1.9-2.3, then 2.4 onwards).
_BERT_DIRS = ("modelzoo/transformers/pytorch/bert", "src/cerebras/modelzoo/models/nlp/bert",
              "transformers/pytorch/bert")


@dataclass
class CerebrasStack:
    """What of the Cerebras stack is here: ``missing`` lists what is not, in words."""

    cerebras_pytorch: bool
    modelzoo_dir: Optional[str]
    bert_dir: Optional[str]
    missing: List[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing


def candidate_modelzoos(modelzoo_dir: Optional[str]) -> List[str]:
    """Where a modelzoo checkout may be: ``modelzoo_dir``, else $LABKIT_MODELZOO, then ~/R_*/modelzoo (newest first)."""
    if modelzoo_dir:
        return [modelzoo_dir]
    found = []
    env = os.environ.get("LABKIT_MODELZOO")
    if env:
        found.append(env)
    home = os.path.expanduser("~")
    try:
        releases = sorted((d for d in os.listdir(home) if d.startswith("R_")), reverse=True)
    except OSError:
        releases = []
    found.extend(os.path.join(home, d, "modelzoo") for d in releases)
    return found


def cerebras_stack(modelzoo_dir: Optional[str] = None) -> CerebrasStack:
    """Look for ``cerebras_pytorch`` and a modelzoo checkout with BERT's ``run.py`` (imports nothing)."""
    has_cstorch = devices.module_available("cerebras_pytorch") or devices.module_available("cerebras.pytorch")
    missing = []
    if not has_cstorch:
        missing.append("the cerebras_pytorch package is not importable in this Python ({})".format(sys.executable))
    root = bert_dir = None
    for candidate in candidate_modelzoos(modelzoo_dir):
        for sub in _BERT_DIRS:
            if os.path.isfile(os.path.join(candidate, sub, "run.py")):
                root, bert_dir = os.path.abspath(candidate), os.path.abspath(os.path.join(candidate, sub))
                break
        if bert_dir:
            break
    if bert_dir is None:
        where = modelzoo_dir or "LABKIT_MODELZOO or ~/R_*/modelzoo"
        missing.append("no modelzoo checkout with BERT's run.py was found (looked in {} for {})".format(
            where, " or ".join(s + "/run.py" for s in _BERT_DIRS[:2])))
    return CerebrasStack(has_cstorch, root, bert_dir, missing)


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
    import yaml

    with open(template) as f:
        params = yaml.safe_load(f) or {}
    msl = (params.get("train_input") or {}).get("max_sequence_length")
    if msl is not None and msl != config.max_seq_length:
        raise ParameterError(["max_seq_length = {}: the data set of {} is preprocessed for sequences of {} tokens; "
                              "allowed on the CS-2 with this template: {}".format(config.max_seq_length, template, msl, msl)],
                             EXERCISE)


@dataclass(repr=False)
class Plan(PlanText):
    """What a run will do: ``path`` is "log", "modelzoo" or "portable"; ``why`` says why there.

    Shown in the notebook as "Where: ..." and "Why: ..." (:class:`labkit.plans.PlanText`).
    """

    path: str
    device: Any = None
    stack: Optional[CerebrasStack] = None
    why: str = ""
    log_path: Optional[str] = None

    def lines(self) -> List[str]:
        if self.path == "log":
            where = "reads the log at {} (a CS-2 run; nothing is trained)".format(self.log_path)
        elif self.path == "modelzoo":
            where = "the CS-2, with the modelzoo in {}".format(self.stack.bert_dir)
        else:
            where = "the portable BERT on {} ({})".format(self.device, devices.device_name(self.device))
        return ["Where: " + where, "Why: " + self.why]

    def describe(self) -> str:
        if self.path == "log":
            return "Reading a CS-2 log (nothing is trained)."
        if self.path == "modelzoo":
            return "Training on the CS-2 with the modelzoo in {}.".format(self.stack.bert_dir)
        return "Training the portable BERT on {} ({}).".format(self.device, devices.device_name(self.device))


def plan(config: Config, sizes: Optional[Sequence[int]] = None) -> Plan:
    """Decide where ``config`` runs, before anything runs.

    Raises :class:`labkit.devices.DeviceError` saying what is missing when ``target="CSX"``
    and the Cerebras stack is not here, or a GPU that was asked for is absent; raises
    ParameterError when a portable run would take hours (see ``allow_long_run``); ``sizes``
    are the batch sizes that will train (default: ``batch_size`` and ``compare_batch_sizes``).
    """
    if config.log_path:
        return Plan("log", why="log_path is set: the run is read from that log", log_path=config.log_path)
    why = ""
    if config.target in ("CSX", "auto"):
        stack = cerebras_stack(config.modelzoo_dir)
        if stack.complete:
            check_template(config, stack)
            why = "target={!r} and the Cerebras stack is here (cerebras_pytorch and the modelzoo's run.py)".format(
                config.target)
            return Plan("modelzoo", stack=stack, why=why)
        if config.target == "CSX":
            raise devices.DeviceError("target='CSX' was asked for, but the Cerebras stack is not here: {}. {}".format(
                "; ".join(stack.missing), CEREBRAS_HELP))
        why = "no CS-2 here ({}); ".format("; ".join(stack.missing))
    device = devices.torch_device("auto" if config.target in ("CSX", "auto") else config.target)
    _check_cost(config, device, sizes)
    return Plan("portable", device=device, why=why + device_why("target", config.target, device))


def estimated_seconds(config: Config, device: Any, batch_size: Optional[int] = None) -> float:
    """A rough, deliberately optimistic time for a portable run (to refuse hopeless ones)."""
    cfg = bert.model_config(config.model_size, config.max_seq_length)
    layers, hidden, seq = cfg.num_hidden_layers, cfg.hidden_size, config.max_seq_length
    per_token = 6 * (12 * layers * hidden * hidden + 2 * layers * seq * hidden) + 6 * 0.15 * cfg.vocab_size * hidden
    tokens = (batch_size or config.batch_size) * config.max_steps * seq
    kind = getattr(device, "type", str(device))
    flops = {"cuda": 5e13, "mps": 5e12}.get(kind, 2e10 * (os.cpu_count() or 1))
    return per_token * tokens / flops


def _check_cost(config: Config, device: Any, sizes: Optional[Sequence[int]] = None) -> None:
    if config.allow_long_run:
        return
    if sizes is None:
        sizes = [config.batch_size] + list(config.compare_batch_sizes)
    seconds = sum(estimated_seconds(config, device, b) for b in sizes)
    if seconds > LONG_RUN_SECONDS:
        raise ParameterError([
            "model_size = {!r}, {}, max_steps = {}: on {} this portable training would take about {} "
            "(a rough estimate); the CS-2 does it in minutes. Allowed here: something smaller, e.g. model_size='tiny', "
            "batch_size=32, max_steps=100, log_steps=10; or read a CS-2 log with log_path; or set "
            "allow_long_run=True.".format(config.model_size, "batch_size = {}".format(sizes[0]) if len(sizes) == 1 else
                                          "batch sizes {}".format(list(sizes)), config.max_steps,
                                          device, _duration(seconds))], EXERCISE)


def _duration(seconds: float) -> str:
    if seconds >= 86400:
        return "{:.0f} days".format(seconds / 86400)
    if seconds >= 3600:
        return "{:.0f} hours".format(seconds / 3600)
    return "{:.0f} minutes".format(seconds / 60)
