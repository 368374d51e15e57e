"""The testbed's two shell scripts, written from the parameters: the compile the course's
BertLarge.sh runs before ``sbatch``, and the course's BertLarge_run.sh batch job.
"""

from __future__ import annotations

import os
import shlex

from labkit.params import Config
from labkit.testbeds.sambanova.bert_large.host import SambaFlow

__all__ = ["compile_script", "run_script", "pef_name"]


def pef_name(config: Config) -> str:
    """The PEF's name, from the parameters the compile depends on."""
    # The course reuses ~/BertLarge/bertlrg/bertlrg.pef whatever the parameters were; naming
    # the PEF by them recompiles when batch, length or tiles change and reuses it otherwise.
    return "bertlrg_b{}_s{}_t{}".format(config.batch_size, config.max_seq_length, config.num_tiles)


def _q(text: str) -> str:
    return shlex.quote(text)


def compile_script(config: Config, setup: SambaFlow, work_dir: str, log_dir: str) -> str:
    """What the course's BertLarge.sh does before ``sbatch``: compile BERT-Large to a PEF."""
    pef = pef_name(config)
    output = os.path.join(log_dir, "BertLarge_compile.out")
    compile_cmd = " ".join([
        setup.python, _q(setup.hook), "compile", "--model_name_or_path bert-large-uncased",
        "--tokenizer_name bert-large-uncased --module_name mlm_ns --task_name mlm_ns",
        "--max_seq_length {}".format(config.max_seq_length),
        "--per_device_train_batch_size {} -b {}".format(config.batch_size, config.batch_size),
        "--output_dir=${OUTDIR}/hf_output --overwrite_output_dir --cache_dir ${OUTDIR}/cache",
        "--compiler-configs-file " + _q(os.path.join(
            setup.app, "human_decisions", "compiler_configs",
            "compiler_configs_bertlarge_sc_mlm_ml_perf_fullfeature_macv2_gm.json")),
        "--mac-human-decision " + _q(os.path.join(
            setup.app, "human_decisions", "mac_overrides", "bertlarge_sc_training_mlm_ml_perf_fullfeature_macv2.json")),
        "--mac-v2 --non_split_head --dense_adam --data-parallel -ws 2 --weight_decay 0.01 --max_grad_norm_clip 1.0",
        "--adam_beta2 0.98 --num-tiles {}".format(config.num_tiles),
        "--pef-name={} --output-folder=${{OUTDIR}} --log-level error --disable-strict-conversion".format(pef),
    ])
    return "\n".join([
        "#!/bin/bash",
        "# Written by labkit (labkit/testbeds/sambanova/bert_large/script.py) from the course's BertLarge.sh: compile only;",
        "# labkit submits the training job itself, after checking the sbatch request.",
        "set -e",
        "export SOFTWARE_HOME=/opt",
        "OUTDIR=" + _q(work_dir),
        "OUTPUT_PATH=" + _q(output),
        'echo "Using ${OUTPUT_PATH} for output"',
        'mkdir -p "$(dirname "${OUTPUT_PATH}")" "${OUTDIR}"',
        "if [ -f {a} ]; then source {a}; fi".format(a=_q(setup.activate)),
        "export OMP_NUM_THREADS=18",
        "SECONDS=0",
        'cd "${OUTDIR}"',
        'echo "Model: " BertLarge > "${OUTPUT_PATH}" 2>&1',
        'echo "Date: " $(date +%m/%d/%y) >> "${OUTPUT_PATH}" 2>&1',
        'echo "Time: " $(date +%H:%M) >> "${OUTPUT_PATH}" 2>&1',
        'apt list --installed sambaflow >> "${OUTPUT_PATH}" 2>&1 || true',
        'echo "Machine State Before: " >> "${OUTPUT_PATH}" 2>&1',
        "if [ -x {s} ]; then {s} -l inventory >> \"${{OUTPUT_PATH}}\" 2>&1; fi".format(s=_q(setup.snfadm)),
        'PEF="${{OUTDIR}}/{p}/{p}.pef"'.format(p=pef),
        'if [ -e "${PEF}" ]; then',
        '  echo "${PEF} exists" | tee -a "${OUTPUT_PATH}"',
        "else",
        "  export SN_NUM_THREADS=32",
        '  echo "COMPILE START AT ${SECONDS}" >> "${OUTPUT_PATH}" 2>&1',
        '  COMMAND="{}"'.format(compile_cmd),
        '  echo "COMPILE COMMAND: $COMMAND" >> "${OUTPUT_PATH}" 2>&1',
        '  eval $COMMAND >> "${OUTPUT_PATH}" 2>&1',
        '  echo "COMPILE END AT ${SECONDS}" >> "${OUTPUT_PATH}" 2>&1',
        "fi",
        'echo "Duration: " $SECONDS >> "${OUTPUT_PATH}" 2>&1',
        "",
    ])


def run_script(config: Config, setup: SambaFlow, work_dir: str) -> str:
    """The course's BertLarge_run.sh, from the parameters: ``sbatch script LOGDIR``.

    As in the course, the job writes its training log to ``$PWD/LOGDIR/BertLarge.out`` and
    prints ``Using ... for output`` to the Slurm output file. Two changes: ``--cache_dir``
    (the course's ``--cache`` is refused by SambaFlow 1.19, as students found), and no
    ``--min_throughput 560000 --validate_stat_perf`` check, which fails every run with fewer
    than 16 tasks after it has trained.
    """
    pef = pef_name(config)
    run_cmd = " ".join([
        "srun"] + list(setup.srun_flags) + [
        setup.python, _q(setup.hook), "run",
        "--config_name " + _q(os.path.join(setup.app, "modules", "configs", "mlm_24layer_ml_perf_config.json")),
        "--tokenizer_name bert-large-uncased --module_name mlm_ns --task_name mlm_ns",
        "--max_seq_length {} -b {}".format(config.max_seq_length, config.batch_size),
        "--output_dir=${OUTDIR}/hf_output --overwrite_output_dir --do_train",
        "--per_device_train_batch_size {}".format(config.batch_size),
        "--data_dir " + _q(setup.data_dir) + " --cache_dir ${OUTDIR}/cache/",
        "--max_predictions_per_seq 20 --warmup_steps 12500 --max_steps 250000",
        "--steps_this_run {} --logging_steps 1 --weight_decay 0.01".format(config.steps),
        "--learning_rate {!r}".format(config.learning_rate),
        "--non_split_head --dense_adam --data-parallel --reduce-on-rdu --adam_beta2 0.98 --max_grad_norm_clip 1.0",
        "--skip_checkpoint --pef=${{OUTDIR}}/{p}/{p}.pef --log-level error".format(p=pef),
    ])
    return "\n".join([
        "#!/bin/bash",
        "# Written by labkit (labkit/testbeds/sambanova/bert_large/script.py) from the course's BertLarge_run.sh.",
        "set -e",
        "export SOFTWARE_HOME=/opt",
        'LOGDIR=$(date +%m%d%y.%H)',
        'if [ "$1" ]; then LOGDIR=$1; fi',
        "OUTPUT_PATH=${PWD}/${LOGDIR}/BertLarge.out",
        'echo "Using ${OUTPUT_PATH} for output"',
        'mkdir -p "${PWD}/${LOGDIR}"',
        "OUTDIR=" + _q(work_dir),
        "if [ -f {a} ]; then source {a}; fi".format(a=_q(setup.activate)),
        "export OMP_NUM_THREADS=18",
        "SECONDS=0",
        'echo "Model: " BertLarge >> "${OUTPUT_PATH}" 2>&1',
        'echo "Date: " $(date +%m/%d/%y) >> "${OUTPUT_PATH}" 2>&1',
        'echo "Time: " $(date +%H:%M) >> "${OUTPUT_PATH}" 2>&1',
        'if [ ! -e "${{OUTDIR}}/{p}/{p}.pef" ]; then'.format(p=pef),
        '  echo "${{OUTDIR}}/{p}/{p}.pef does not exist, exiting" >> "${{OUTPUT_PATH}}" 2>&1'.format(p=pef),
        "  exit 1",
        "fi",
        'echo "RUN" >> "${OUTPUT_PATH}" 2>&1',
        "export SAMBA_CCL_ASYNC_ALLREDUCE=0",
        "export SAMBA_CCL_HIERARCHICAL_ALLREDUCE=0",
        'env >> "${OUTPUT_PATH}" 2>&1',
        'COMMAND="{}"'.format(run_cmd),
        'echo "RUN COMMAND: $COMMAND" >> "${OUTPUT_PATH}" 2>&1',
        'eval $COMMAND >> "${OUTPUT_PATH}" 2>&1',
        'echo "Duration: " $SECONDS >> "${OUTPUT_PATH}" 2>&1',
        "",
    ])
