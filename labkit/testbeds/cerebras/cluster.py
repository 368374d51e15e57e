"""The CS-3 cluster's parameters, the same in both Cerebras exercises: how many CS-3s train (data parallel), the
job's time limit and a restart from a checkpoint; their flags, their line in a params file and in a plan.

From ALCF's user guide (argonne-lcf/user-guides, docs/ai-testbed/cerebras/): example-programs.md (``--num_csx=2``
"(or 3 or 4)" on the ``cszoo fit`` line; two MemoryX groups, so at most 2 training jobs at once),
running-a-model-or-program.md (``trainer.init.backend.cluster_config.job_time_sec``, jobs of at most 24 hours;
``--checkpoint_path=path_to_mdl_file`` restarts, ``max_steps`` counting from the first run). The flags are those
of the modelzoo's cli/utils.py ``add_run_args`` (Release 2.10.0).
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Tuple

import yaml

from labkit.params import PATH, Param, existing_file
from labkit.testbeds.cerebras.yaml_lines import put_scalar

__all__ = ["MAX_CSX", "MAX_JOB_SECONDS", "CS3_PARAMS", "JOB_TIME_KEYS", "cluster_flags", "set_job_time",
           "cluster_lines"]

MAX_CSX = 4
MAX_JOB_SECONDS = 24 * 3600

CS3_PARAMS = (
    Param("num_csx", int, 1, "CS-3 systems the run trains on, data parallel (cszoo fit --num_csx): each trains "
          "on its share of every batch", min=1, max=MAX_CSX),
    Param("job_time_sec", int, None, "the CS-3 job's time limit in seconds (the params file's "
          "trainer.init.backend.cluster_config.job_time_sec); None: the file's; ALCF asks for at most 24 hours",
          optional=True, min=60, max=MAX_JOB_SECONDS),
    Param("checkpoint_path", PATH, None, "restart on the CS-3 from this checkpoint (cszoo fit --checkpoint_path, e.g. "
          "model_dir/checkpoint_200.mdl); the steps count from the first run's start", optional=True,
          check=existing_file),
)

#: Where a params file keeps the job's time limit: the trainer layout, then the older runconfig one
#: (trainer/utils.py ``TRAINER_PARAMS_TO_LEGACY``).
JOB_TIME_KEYS = (("trainer", "init", "backend", "cluster_config", "job_time_sec"), ("runconfig", "job_time_sec"))


def cluster_flags(config: Any) -> List[str]:
    """The ``cszoo fit`` flags of ``config``'s cluster parameters: ``--num_csx=N`` always (said out loud, as the
    2024 course's run.py line does), ``--checkpoint_path=P`` for a restart (absolute: cszoo runs in the model's
    folder, not the notebook's)."""
    flags = ["--num_csx={}".format(getattr(config, "num_csx", None) or 1)]
    checkpoint = getattr(config, "checkpoint_path", None)
    if checkpoint:
        flags.append("--checkpoint_path={}".format(os.path.abspath(checkpoint)))
    return flags


def set_job_time(text: str, seconds: int) -> Tuple[str, Optional[Any]]:
    """``text`` with the job's time limit set to ``seconds`` (added when the file has none); the old value."""
    params = yaml.safe_load(text) or {}
    path = JOB_TIME_KEYS[0] if "trainer" in params or "runconfig" not in params else JOB_TIME_KEYS[1]
    old = params
    for key in path:
        old = old.get(key) if isinstance(old, dict) else None
    text, _ = put_scalar(text, path, int(seconds))
    yaml.safe_load(text)  # the edit must leave a file the modelzoo can read
    return text, old


def cluster_lines(config: Any, batch_size: Optional[int]) -> List[str]:
    """A CS-3 plan's lines on data parallelism, the time limit and the restart."""
    lines = []
    n = getattr(config, "num_csx", None) or 1
    if n > 1:
        share = "{} samples".format(batch_size // n) if batch_size and batch_size % n == 0 else "1/{}".format(n)
        lines.append("Data parallel: {} CS-3s, each training {} of every batch of {}; the global batch, the steps and "
                     "the loss curve stay those of one CS-3, the samples per second grow up to {}x (less the weight "
                     "exchange through MemoryX and SwarmX). A new num_csx compiles once more. At most 2 training jobs "
                     "run on the cluster at once.".format(n, share, batch_size or "the params file's", n))
    seconds = getattr(config, "job_time_sec", None)
    if seconds:
        lines.append("Time limit: the CS-3 job stops after {} s (job_time_sec).".format(seconds))
    checkpoint = getattr(config, "checkpoint_path", None)
    if checkpoint:
        lines.append("Restart: from {} (--checkpoint_path); the run goes on to the file's max_steps, counted from "
                     "the first run's start.".format(os.path.abspath(checkpoint)))
    return lines
