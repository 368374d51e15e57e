"""What of the Cerebras stack is on this host for the CS-2 path, and which params YAML a CS-2 run starts from.

    from labkit.testbeds.cerebras import bert_large
    bert_large.cerebras_stack()      # CerebrasStack: cerebras_pytorch? a modelzoo with BERT's run.py?

Nothing here imports the Cerebras stack; it only looks for it. :func:`labkit.testbeds.cerebras.bert_large.plan`
decides from it where a run goes.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import List, Optional

from labkit import devices
from labkit.params import Config, ParameterError
from labkit.testbeds.cerebras.bert_large.spec import DEFAULT_TEMPLATE, EXERCISE
from labkit.testbeds.cerebras import candidate_modelzoos

__all__ = ["CerebrasStack", "cerebras_stack", "template_path", "check_template"]


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
