"""The testbed path: compile, submit the training job with sbatch, follow it, read its log;
and reading a training log a testbed wrote.

Verified only against a real Slurm with SambaFlow replaced by a script that writes SambaFlow's
log lines (tests/slurm/test_sambanova_job.py): no SambaFlow could be installed here.
"""

from __future__ import annotations

import datetime
import os
import re
import shlex
import socket
import subprocess
from pathlib import Path
from typing import Optional, Union

import labkit.logs
from labkit import jobs
from labkit.params import Config
from labkit.results import Run
from labkit.testbeds.sambanova.bert_large.host import SambaFlow
from labkit.testbeds.sambanova.bert_large.log import POINTER
from labkit.testbeds.sambanova.bert_large.script import compile_script, run_script
from labkit.testbeds.sambanova.bert_large.spec import slurm_request

__all__ = ["run_testbed", "read_log", "DURATION_NOTE"]

DURATION_NOTE = ("The compile log's 'Duration: {} s' is the compile (and, in the course's BertLarge.sh, the "
                 "submission): it is not training time. Training time is e2e_train_time in the job's own log.")


def read_log(path: Union[str, os.PathLike], config: Optional[Config] = None) -> Run:
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


def _text(path: Optional[str]) -> Optional[str]:
    try:
        return Path(path).read_text(errors="replace") if path else None
    except OSError:
        return None


def _training_log(slurm_out: str) -> Optional[str]:
    """The path the job's ``Using DIR/BertLarge.out for output`` line names."""
    found = POINTER.findall(_text(slurm_out) or "")
    return found[-1] if found else None


def _steps_in(path: Optional[str]) -> int:
    steps = re.findall(r"global_step:(\d+)\|", _text(path) or "")
    return int(steps[-1]) if steps else 0


def run_testbed(config: Config, setup: SambaFlow = SambaFlow(), poll: float = 5.0, timeout: float = 6 * 3600,
                show: bool = True) -> Run:
    """Compile (or reuse the PEF), submit the training job, follow it, read its log."""
    work_dir = os.path.abspath(os.path.expanduser(config.work_dir))
    stamp = datetime.datetime.now().strftime("%m%d%y.%H%M%S")
    log_dir = os.path.join(work_dir, stamp)
    os.makedirs(log_dir, exist_ok=True)
    request = slurm_request(config, output=os.path.join(work_dir, "slurm-%j.out"))
    host = socket.gethostname().split(".")[0]
    if config.nodes == 1:
        request = request.replace(nodelist=host)  # as BertLarge.sh: train on the node that compiled
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
    status = jobs.follow(job, poll=poll, timeout=timeout, show=show, reached=lambda _status: _steps_in(expected_log),
                         total=config.steps, log_hint="its log will be {}, readable with log_path".format(expected_log))

    slurm_out = jobs.output_path(job, status)
    training_log = _training_log(slurm_out) or expected_log
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
