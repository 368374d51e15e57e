"""Where a Cerebras modelzoo checkout may be on this host, for both courses' exercises.

    from labkit.testbeds.cerebras.checkouts import candidate_modelzoos
    candidate_modelzoos(None)     # [$LABKIT_MODELZOO, ~/R_2.6.0/modelzoo, ~/R_2.3.0/modelzoo, ...]

The CS-2 BERT-Large exercise looks there for BERT's ``run.py``, the CS-3 LLaMA-2-7B exercise
for the LLaMA model that ``cszoo fit`` trains. Nothing here imports the Cerebras stack.
"""

from __future__ import annotations

import os
from typing import List, Optional

__all__ = ["candidate_modelzoos"]


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
