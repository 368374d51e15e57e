"""The Cerebras BERT-Large exercise's parameters: :data:`SPEC`, its defaults and checks (docs/cerebras.md
lists every parameter; the notebook's metadata names ``labkit.testbeds.cerebras:SPEC``, forwarded here).
"""

from __future__ import annotations

from typing import Any, Optional

from labkit import accelerator, bert
from labkit.params import INT_OR_AUTO, PATH, Config, Param, Spec, existing_file, folder_path
from labkit.testbeds.cerebras.cluster import CS3_PARAMS
from labkit.testbeds.cerebras.release import CHECKED_RELEASE, setup_commands

__all__ = ["SPEC", "EXERCISE", "DEFAULT_TEMPLATE", "MAX_STEPS", "LONG_RUN_SECONDS", "CEREBRAS_HELP"]

EXERCISE = "cerebras/bert_large"

#: Where the ALCF course keeps its BERT-Large params file (copied into the modelzoo's configs/).
DEFAULT_TEMPLATE = "/software/cerebras/dataset/bert_large/bert_large_MSL128_sampleds.yaml"

#: Most steps one run may ask for: the course runs 1000; the modelzoo's full MSL128 phase 72000.
MAX_STEPS = 100000

#: A portable run estimated to take longer than this is refused unless allow_long_run=True.
LONG_RUN_SECONDS = 2 * 3600


def _positive_ints(values: Any) -> Optional[str]:
    bad = [v for v in values or [] if v < 1 or v > 65536]
    return "batch sizes must be between 1 and 65536, not {}".format(bad) if bad else None


def _log_within_steps(config: Config):
    if config.log_steps > config.max_steps:
        return ("log_steps", "more than max_steps = {}, so no step would be logged; allowed: 1 to {}".format(
            config.max_steps, config.max_steps))
    return None


def _micro_batch_divides(config: Config):
    micro = config.micro_batch_size
    if micro not in (None, "auto") and (micro > config.batch_size or config.batch_size % micro):
        return ("micro_batch_size", "must divide batch_size = {} (gradient accumulation runs batch_size / "
                "micro_batch_size micro-batches per step)".format(config.batch_size))
    return None


SPEC = Spec(
    EXERCISE,
    Param("batch_size", int, 1024, "samples per optimizer step (the modelzoo's effective batch size)", min=1, max=65536),
    Param("max_steps", int, 1000, "optimizer steps (runconfig.max_steps)", min=1, max=MAX_STEPS),
    Param("log_steps", int, 100, "log every this many steps (runconfig.log_steps)", min=1, max=MAX_STEPS),
    Param("max_seq_length", int, 128, "tokens per sequence (MSL)", min=8, max=512),
    Param("model_size", str, "large", "BERT preset: large on the CS-2; base, mini, tiny, micro elsewhere",
          choices=tuple(bert.MODEL_SIZES)),
    Param("target", str, "auto", "CSX (cszoo fit on a CS-3; run.py on a CS-2 with an older modelzoo), cuda, mps, "
          "cpu, or auto",
          choices=("auto", "CSX", "cuda", "mps", "cpu")),
    Param("seed", int, 0, "seeds weights, data and dropout (runconfig.seed)", min=0, max=2**31 - 1),
    Param("log_path", PATH, None, "read this CS-2 log instead of training", optional=True, check=existing_file),
    Param("learning_rate", float, 1e-4, "AdamW learning rate (portable runs)", min=0, min_exclusive=True, max=1.0),
    Param("micro_batch_size", INT_OR_AUTO, None, "gradient-accumulation micro-batch; None: the CS-2 compiler "
          "searches (the params file's own value), 'auto' is written for the modelzoo to pick; on the portable path "
          "None and 'auto' both take labkit.accelerator's choice (the largest that fits a GPU, the whole batch on a "
          "CPU)", optional=True, min=1, max=65536),
    Param("precision", str, "auto", "portable path: auto (bf16 autocast on an Ampere or newer GPU, fp32 on a CPU), "
          "fp32, tf32 or bf16; the CS-2 trains in mixed precision whatever this says", choices=accelerator.PRECISIONS),
    Param("compare_batch_sizes", list, [], "homework: also train at these batch sizes here", item_type=int,
          check=_positive_ints),
    Param("compare_logs", list, [], "homework: CS-2 logs to compare (e.g. runs at 512, 1024, 2048)",
          item_type=PATH, check=existing_file),
    Param("modelzoo_dir", PATH, None, "modelzoo checkout (found under ~/R_*/modelzoo when None)", optional=True,
          check=folder_path),
    Param("params_template", PATH, None, "params YAML to start from (the course's, when None)", optional=True,
          check=existing_file),
    Param("model_dir", str, "model_dir_bert_large_pytorch", "where cszoo fit (or run.py) writes checkpoints; each "
          "run gets a new subfolder, so checkpoint autoloading never resumes an old run"),
    *CS3_PARAMS,
    Param("allow_long_run", bool, False, "allow a portable run estimated to take over 2 hours"),
    checks=[_log_within_steps, _micro_batch_divides],
)

CEREBRAS_HELP = (
    "The CS-3 path runs ALCF's `cszoo fit configs/bert_large_MSL128_sampleds.yaml --job_labels name=bert_pt "
    "--model_dir $MODEL_DIR` on a Cerebras user node, in a venv of Release {r} as ALCF documents it (`{setup}`; pass "
    "the checkout as modelzoo_dir, or keep it under ~/R_{r}/modelzoo). The 2024 course's way, `python run.py CSX ...` "
    "on a CS-2, still runs where a modelzoo before 2.10 and its cerebras_pytorch are installed. Elsewhere use "
    "target='auto', 'cuda', 'mps' or 'cpu' (the portable BERT), or log_path to read a CS-2 or CS-3 log.".format(
        r=CHECKED_RELEASE, setup=setup_commands())
)
