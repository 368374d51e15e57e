"""The LLaMA-2-7B exercise's parameters: :data:`SPEC`, the course's values and the portable sizes.

Each parameter mirrors a key of the course's ``params_llama2_7b.yaml`` (docs/cerebras.md, "Parameters").
None keeps the course's file on a CS-3 user node and means a laptop-sized run (:data:`PORTABLE_DEFAULTS`)
on the portable path; :func:`effective` resolves every None.
"""

from __future__ import annotations

from typing import Any, Dict

from labkit.accelerator import PRECISIONS
from labkit.llm import MODEL_SIZES
from labkit.params import PATH, Config, Param, Spec, existing_file, folder_path
from labkit.testbeds.cerebras.cluster import CS3_PARAMS

__all__ = ["SPEC", "EXERCISE", "COURSE", "PORTABLE_DEFAULTS", "PORTABLE_SIZE", "MAX_STEPS", "LONG_RUN_SECONDS",
           "effective"]

EXERCISE = "cerebras/llama2_7b"

#: The course's run (its sample log: 200 steps of 1024 samples, a report every 50 steps) and the
#: modelzoo's params_llama2_7b.yaml (sequences of 4096 tokens, AdamW peaking at 3e-4, seed 1).
COURSE: Dict[str, Any] = {"model_size": "7b", "batch_size": 1024, "steps": 200, "log_steps": 50,
                          "sequence_length": 4096, "learning_rate": 3e-4, "seed": 1}

#: What None means on the portable path: about 1 minute of training on two idle CPU cores (the notebook's
#: Run All measured 4 min 46 s for 80 steps with a test run sharing the cores: 40 keep it near 2 minutes).
PORTABLE_DEFAULTS: Dict[str, Any] = {"batch_size": 8, "steps": 40, "log_steps": 5, "sequence_length": 128,
                                     "learning_rate": 1e-3, "seed": 0}

#: The preset model_size="auto" trains on the portable path on a CPU or MPS (a CUDA GPU: the largest that fits).
PORTABLE_SIZE = "small"

MAX_STEPS = 1000000

#: A portable run estimated to take longer than this is refused unless allow_long_run=True.
LONG_RUN_SECONDS = 2 * 3600


def _log_within_steps(config: Config):
    if config.log_steps is not None and config.steps is not None and config.log_steps > config.steps:
        return ("log_steps", "more than steps = {}, so no step would be reported; allowed: 1 to {}".format(
            config.steps, config.steps))
    return None


SPEC = Spec(
    EXERCISE,
    Param("batch_size", int, None, "samples (sequences) per optimizer step, train_input.batch_size; None: the "
          "course's 1024 on a CS-3, 8 on the portable path", optional=True, min=1, max=65536),
    Param("steps", int, None, "optimizer steps, runconfig.max_steps; None: the course's 200 on a CS-3, 40 portable",
          optional=True, min=1, max=MAX_STEPS),
    Param("log_steps", int, None, "report Rate and GlobalRate every this many steps, runconfig.log_steps; None: "
          "the course's 50 on a CS-3, 5 portable", optional=True, min=1, max=MAX_STEPS),
    Param("sequence_length", int, None, "tokens per sample; None: the course's data set (4096) on a CS-3, "
          "128 portable", optional=True, min=2, max=32768),
    Param("learning_rate", float, None, "peak AdamW learning rate; None: the course's schedule on a CS-3, "
          "1e-3 portable", optional=True, min=0, min_exclusive=True, max=1.0),
    Param("model_size", str, "auto", "LLaMA preset: 7b (the course's, on a CS-3), small or tiny (portable); auto: "
          "7b on a CS-3; on a CUDA GPU the largest preset that fits it and trains within 2 hours (7b on an H200); "
          "small on a CPU or MPS", choices=("auto",) + tuple(MODEL_SIZES)),
    Param("precision", str, "auto", "portable path: auto (bf16 autocast on an Ampere or newer GPU, fp32 on a CPU), "
          "fp32, tf32 or bf16; the CS-3 trains in mixed precision whatever this says", choices=PRECISIONS),
    Param("device", str, "auto", "CSX (cszoo fit on a CS-3), cuda, mps, cpu, or auto",
          choices=("auto", "CSX", "cuda", "mps", "cpu")),
    Param("log_path", PATH, None, "read this CS-3 log (cszoo fit ... |& tee mytest.log) instead of training",
          optional=True, check=existing_file),
    Param("seed", int, None, "seeds weights and data (runconfig.seed); None: the course's on a CS-3, 0 portable",
          optional=True, min=0, max=2**31 - 1),
    Param("corpus", str, "pydoc", "portable training text: pydoc (ships with Python) or a hub dataset name"),
    Param("modelzoo_dir", PATH, None, "modelzoo checkout (found under ~/R_*/modelzoo when None)", optional=True,
          check=folder_path),
    Param("params_template", PATH, None, "params YAML to start from (the course's, when None)", optional=True,
          check=existing_file),
    Param("model_dir", str, "model_dir_llama2_7b", "where cszoo fit writes checkpoints (the course's folder)"),
    *CS3_PARAMS,
    Param("allow_long_run", bool, False, "allow a portable run estimated to take over 2 hours"),
    checks=[_log_within_steps],
)


def effective(config: Config, path: str = "portable") -> Dict[str, Any]:
    """The values a run on ``path`` ("portable", "cs3" or "log") uses: the config's, with None
    replaced by the course's (on the CS-3) or the portable defaults; ``model_size`` "auto" resolved."""
    base = COURSE if path in ("cs3", "log") else PORTABLE_DEFAULTS
    values = {name: base[name] if config[name] is None else config[name]
              for name in ("batch_size", "steps", "log_steps", "sequence_length", "learning_rate", "seed")}
    if config.log_steps is None and config.steps is not None:
        values["log_steps"] = min(values["log_steps"], values["steps"])
    size = config.model_size
    values["model_size"] = (COURSE["model_size"] if path in ("cs3", "log") else PORTABLE_SIZE) if size == "auto" else size
    return values
