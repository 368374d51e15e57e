"""The testbed path: where SambaFlow lives and whether this is a SambaNova node, the compile and
batch scripts written from the parameters (the course's BertLarge.sh and BertLarge_run.sh),
compile, submit the training job with sbatch, follow it, read its log; and reading a training
log a testbed wrote.

Verified only against a real Slurm with SambaFlow replaced by a script that writes SambaFlow's
log lines (tests/slurm/test_sambanova_job.py): no SambaFlow could be installed here.
"""

from __future__ import annotations

import datetime
import os
import re
import shlex
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from shlex import quote
from typing import Any, Optional, Union

import labkit.logs
from labkit import jobs
from labkit.params import Config
from labkit.results import Run
from labkit.testbeds.sambanova.bert_large.log import POINTER
from labkit.testbeds.sambanova.bert_large.spec import slurm_request

__all__ = ["SambaFlow", "sambanova_host", "run_testbed", "read_log", "DURATION_NOTE"]

DURATION_NOTE = ("The compile log's 'Duration: {} s' is the compile (and, in the course's BertLarge.sh, the "
                 "submission): it is not training time. Training time is e2e_train_time in the job's own log.")


@dataclass(frozen=True)
class SambaFlow:
    """Where SambaFlow lives on a SambaNova node (the course's paths under /opt/sambaflow)."""

    root: str = "/opt/sambaflow"
    python: str = "python"
    data_dir: str = "/data/ANL/wikicorpus_en"

    @property
    def app(self) -> str:
        return os.path.join(self.root, "apps", "nlp", "transformers_on_rdu")

    @property
    def hook(self) -> str:
        return os.path.join(self.app, "transformers_hook.py")

    @property
    def activate(self) -> str:
        return os.path.join(self.app, "venv", "bin", "activate")

    @property
    def snfadm(self) -> str:
        return os.path.join(self.root, "bin", "snfadm")


def sambanova_host(setup: SambaFlow = SambaFlow()) -> bool:
    """True on a SambaNova node: Slurm's sbatch and SambaFlow (its BERT app or snrdtoolkit) are here."""
    sambaflow = os.path.isfile(setup.hook) or shutil.which("snrdtoolkit") is not None
    return jobs.slurm_available() and sambaflow


def read_log(path: Union[str, os.PathLike]) -> Run:
    """The training run recorded in a SambaNova log (``BertLarge.out``, or a ``slurm-<id>.out``
    whose ``Using ... for output`` file sits next to it)."""
    report = labkit.logs.read(path, format="sambanova")
    if not report.runs:
        raise labkit.logs.NoRunError("{}: no training run in it. {}".format(os.fspath(path), " ".join(report.notes)))
    runs = [r for r in report.runs if "e2e_train_time" in r.metrics] or report.runs
    found = runs[-1]
    found.notes.extend(n for n in report.notes if n not in found.notes)
    found.params.setdefault("steps", found.params.get("steps_this_run"))
    found.params["log_path"] = os.fspath(path)
    return found


def pef_name(config: Config) -> str:
    """The PEF's name, from the parameters the compile depends on."""
    # The course reuses ~/BertLarge/bertlrg/bertlrg.pef whatever the parameters were; naming
    # the PEF by them recompiles when batch, length or tiles change and reuses it otherwise.
    return "bertlrg_b{}_s{}_t{}".format(config.batch_size, config.max_seq_length, config.num_tiles)


def compile_script(config: Config, setup: SambaFlow, work_dir: str, log_dir: str) -> str:
    """What the course's BertLarge.sh does before ``sbatch``: compile BERT-Large to a PEF."""
    pef = pef_name(config)
    output = os.path.join(log_dir, "BertLarge_compile.out")
    compile_cmd = " ".join([
        setup.python, quote(setup.hook), "compile", "--model_name_or_path bert-large-uncased",
        "--tokenizer_name bert-large-uncased --module_name mlm_ns --task_name mlm_ns",
        "--max_seq_length {}".format(config.max_seq_length),
        "--per_device_train_batch_size {} -b {}".format(config.batch_size, config.batch_size),
        "--output_dir=${OUTDIR}/hf_output --overwrite_output_dir --cache_dir ${OUTDIR}/cache",
        "--compiler-configs-file " + quote(os.path.join(
            setup.app, "human_decisions", "compiler_configs",
            "compiler_configs_bertlarge_sc_mlm_ml_perf_fullfeature_macv2_gm.json")),
        "--mac-human-decision " + quote(os.path.join(
            setup.app, "human_decisions", "mac_overrides", "bertlarge_sc_training_mlm_ml_perf_fullfeature_macv2.json")),
        "--mac-v2 --non_split_head --dense_adam --data-parallel -ws 2 --weight_decay 0.01 --max_grad_norm_clip 1.0",
        "--adam_beta2 0.98 --num-tiles {}".format(config.num_tiles),
        "--pef-name={} --output-folder=${{OUTDIR}} --log-level error --disable-strict-conversion".format(pef),
    ])
    return "\n".join([
        "#!/bin/bash",
        "# Written by labkit (labkit.testbeds.sambanova.bert_large.testbed) from the course's BertLarge.sh: compile only;",
        "# labkit submits the training job itself, after checking the sbatch request.",
        "set -e",
        "export SOFTWARE_HOME=/opt",
        "OUTDIR=" + quote(work_dir),
        "OUTPUT_PATH=" + quote(output),
        'echo "Using ${OUTPUT_PATH} for output"',
        'mkdir -p "$(dirname "${OUTPUT_PATH}")" "${OUTDIR}"',
        "if [ -f {a} ]; then source {a}; fi".format(a=quote(setup.activate)),
        "export OMP_NUM_THREADS=18",
        "SECONDS=0",
        'cd "${OUTDIR}"',
        'echo "Model: " BertLarge > "${OUTPUT_PATH}" 2>&1',
        'echo "Date: " $(date +%m/%d/%y) >> "${OUTPUT_PATH}" 2>&1',
        'echo "Time: " $(date +%H:%M) >> "${OUTPUT_PATH}" 2>&1',
        'apt list --installed sambaflow >> "${OUTPUT_PATH}" 2>&1 || true',
        'echo "Machine State Before: " >> "${OUTPUT_PATH}" 2>&1',
        "if [ -x {s} ]; then {s} -l inventory >> \"${{OUTPUT_PATH}}\" 2>&1; fi".format(s=quote(setup.snfadm)),
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
        "srun --mpi=pmi2", setup.python, quote(setup.hook), "run",
        "--config_name " + quote(os.path.join(
            setup.app, "modules", "configs", "mlm_24layer_ml_perf_config.json")),
        "--tokenizer_name bert-large-uncased --module_name mlm_ns --task_name mlm_ns",
        "--max_seq_length {} -b {}".format(config.max_seq_length, config.batch_size),
        "--output_dir=${OUTDIR}/hf_output --overwrite_output_dir --do_train",
        "--per_device_train_batch_size {}".format(config.batch_size),
        "--data_dir " + quote(setup.data_dir) + " --cache_dir ${OUTDIR}/cache/",
        "--max_predictions_per_seq 20 --warmup_steps 12500 --max_steps 250000",
        "--steps_this_run {} --logging_steps 1 --weight_decay 0.01".format(config.steps),
        "--learning_rate {!r}".format(config.learning_rate),
        "--non_split_head --dense_adam --data-parallel --reduce-on-rdu --adam_beta2 0.98 --max_grad_norm_clip 1.0",
        "--skip_checkpoint --pef=${{OUTDIR}}/{p}/{p}.pef --log-level error".format(p=pef),
    ])
    return "\n".join([
        "#!/bin/bash",
        "# Written by labkit (labkit.testbeds.sambanova.bert_large.testbed) from the course's BertLarge_run.sh.",
        "set -e",
        "export SOFTWARE_HOME=/opt",
        'LOGDIR=$(date +%m%d%y.%H)',
        'if [ "$1" ]; then LOGDIR=$1; fi',
        "OUTPUT_PATH=${PWD}/${LOGDIR}/BertLarge.out",
        'echo "Using ${OUTPUT_PATH} for output"',
        'mkdir -p "${PWD}/${LOGDIR}"',
        "OUTDIR=" + quote(work_dir),
        "if [ -f {a} ]; then source {a}; fi".format(a=quote(setup.activate)),
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


def _text(path: Optional[str]) -> Optional[str]:
    try:
        return Path(path).read_text(errors="replace") if path else None
    except OSError:
        return None


def _last(pattern: Any, path: Optional[str]) -> Optional[str]:
    found = re.findall(pattern, _text(path) or "")
    return found[-1] if found else None


def run_testbed(config: Config, setup: SambaFlow = SambaFlow(), poll: float = 5.0, timeout: float = 6 * 3600,
                show: bool = True) -> Run:
    """Compile (or reuse the PEF), submit the training job, follow it, read its log."""
    work_dir = os.path.abspath(os.path.expanduser(config.work_dir))
    stamp = datetime.datetime.now().strftime("%m%d%y.%H%M%S")
    log_dir = os.path.join(work_dir, stamp)
    os.makedirs(log_dir, exist_ok=True)
    request = slurm_request(config, output=os.path.join(work_dir, "slurm-%j.out"))
    if config.nodes == 1:  # as BertLarge.sh: train on the node that compiled
        request = request.replace(nodelist=socket.gethostname().split(".")[0])
    compile_path = os.path.join(log_dir, "compile.sh")
    run_path = os.path.join(log_dir, "BertLarge_run.sh")
    Path(compile_path).write_text(compile_script(config, setup, work_dir, log_dir))
    Path(run_path).write_text(run_script(config, setup, work_dir))
    os.chmod(compile_path, 0o755)
    os.chmod(run_path, 0o755)
    request.validate(jobs.SN30)

    compile_log = os.path.join(log_dir, "BertLarge_compile.out")
    if show:
        print("Compiling (or reusing the PEF): log in {}".format(compile_log))
    done = subprocess.run(["bash", compile_path], capture_output=True, text=True, cwd=work_dir)
    compiled = labkit.logs.read(compile_log, format="sambanova") if os.path.exists(compile_log) else None
    if done.returncode != 0:
        raise RuntimeError("The SambaFlow compile failed (exit {}); see {}:\n{}".format(
            done.returncode, compile_log, _tail(compile_log)))

    job = jobs.submit(request, run_path, args=[stamp], cwd=work_dir)
    if show:
        print("Submitted batch job {}: {}".format(job.job_id, shlex.join(job.argv)))
    expected_log = os.path.join(work_dir, stamp, "BertLarge.out")
    # the bar counts the training steps the job's log has reached
    status = jobs.follow(job, poll=poll, timeout=timeout, show=show, total=config.steps,
                         reached=lambda _status: int(_last(r"global_step:(\d+)\|", expected_log) or 0),
                         log_hint="its log will be {}, readable with log_path".format(expected_log))

    slurm_out = jobs.output_path(job, status)
    training_log = _last(POINTER, slurm_out) or expected_log  # the job's 'Using ... for output' line
    if not os.path.exists(training_log):
        raise RuntimeError("Job {} ended {} but wrote no training log at {} (Slurm output {}):\n{}".format(
            job.job_id, status.state, training_log, slurm_out, _tail(slurm_out)))
    found = read_log(training_log)
    found.source = "testbed"
    # The training log alone cannot tell whether a compile ran; the compile log can.
    found.notes = [n for n in found.notes if "compilation was skipped" not in n]
    if not status.succeeded and found.status == "complete":
        found.status = "failed"
        found.notes.append("Slurm reports job {} as {} (exit code {}).".format(job.job_id, status.state, status.exit_code))
    found.params.update(config.to_dict())
    found.params.update({"job_id": int(job.job_id), "training_log": training_log, "slurm_output": slurm_out,
                         "compile_log": compile_log})
    if compiled is not None and compiled.runs:
        compile_run = compiled.runs[-1]
        for key in ("compile_s", "compile_skipped"):
            if key in compile_run.metrics:
                found.add_metric(key, compile_run.metrics[key], compile_run.units.get(key, ""))
        found.notes.extend(n for n in compile_run.notes if "compilation was skipped" in n or "PEF" in n)
        if "duration_s" in compile_run.metrics:
            found.notes.append(DURATION_NOTE.format(compile_run.metrics["duration_s"]))
    return found


def _tail(path: str, lines: int = 15) -> str:
    text = _text(path)
    return "(no file)" if text is None else "\n".join(text.splitlines()[-lines:])
