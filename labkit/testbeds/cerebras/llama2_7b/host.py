"""Is this host a CS-3 user node? What a ``cszoo fit`` run needs and is missing here, in words.

    from labkit.testbeds.cerebras import llama2_7b
    llama2_7b.cs3_node()            # [] on a CS-3 user node, else what is missing

A CS-3 user node is one where the ``cszoo`` command and a modelzoo checkout with the LLaMA
model are present (the course's ``~/R_2.6.0/modelzoo``). :func:`labkit.testbeds.cerebras.llama2_7b.plan`
decides from it where a run goes.
"""

from __future__ import annotations

import os
import shutil
from typing import List, Optional

from labkit.testbeds.cerebras import candidate_modelzoos

__all__ = ["cs3_node", "LLAMA_DIRS", "CS3_HELP"]

#: Where the LLaMA model sits in a modelzoo checkout (Release 2.4 onwards).
LLAMA_DIRS = ("src/cerebras/modelzoo/models/nlp/llama",)

CS3_HELP = ("The CS-3 path runs the course's `cszoo fit configs/params_llama2_7b.yaml ...` on a Cerebras user node, in "
            "the course's virtual environment (`python3.11 -m venv ~/R_2.6.0/venv_cerebras_pt`, `pip install -e "
            "modelzoo` in a checkout of Release_2.6.0 under ~/R_2.6.0/modelzoo, or pass modelzoo_dir). Elsewhere use "
            "device='auto', 'cuda', 'mps' or 'cpu' (the portable LLaMA), or log_path to read a CS-3 log.")


def cs3_node(modelzoo_dir: Optional[str] = None) -> List[str]:
    """What a CS-3 run needs and is missing here, in words (an empty list on a CS-3 user node)."""
    missing = []
    if shutil.which("cszoo") is None:
        missing.append("no `cszoo` command on PATH (the modelzoo's CLI, installed by `pip install -e modelzoo`)")
    if not any(os.path.isdir(os.path.join(root, sub)) for root in candidate_modelzoos(modelzoo_dir) for sub in LLAMA_DIRS):
        missing.append("no modelzoo checkout with {} (looked in {})".format(
            LLAMA_DIRS[0], modelzoo_dir or "LABKIT_MODELZOO and ~/R_*/modelzoo"))
    return missing
