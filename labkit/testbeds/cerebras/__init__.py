"""Cerebras: BERT-Large pre-training with the modelzoo on a CS-2, or the portable BERT anywhere.

Notebook: ``notebooks/cerebras/bert_large.ipynb``. From a shell:

    papermill notebooks/cerebras/bert_large.ipynb out.ipynb                      # on a Cerebras user node
    papermill notebooks/cerebras/bert_large.ipynb out.ipynb -p model_size tiny -p batch_size 16 -p max_steps 50 -p log_steps 10
    papermill notebooks/cerebras/bert_large.ipynb out.ipynb -p log_path mytest.log   # read a CS-2 log

From Python:

    from labkit.testbeds import cerebras
    config = cerebras.BERT_SPEC.validate({"model_size": "micro", "batch_size": 8, "max_steps": 20, "log_steps": 10})
    run = cerebras.run_bert(config)           # a labkit.results.Run

Three ways to a run, all giving the same metrics (``samples_per_sec`` = the last GlobalRate,
``time_per_sample``, ``final_loss``, ``total_samples``, ``total_time``):

- ``target="CSX"`` (or ``"auto"`` on a Cerebras user node, where the modelzoo checkout and
  ``cerebras_pytorch`` are importable): :func:`write_params_yaml` writes the course's params
  file with the chosen batch size and steps, :func:`modelzoo_command` builds the course's
  ``python run.py CSX ...`` command, :func:`stream_command` runs it and streams its log into
  the notebook (and a file), and :mod:`labkit.logs` reads the metrics from that log.
  Verified only on the testbed; here it is tested against a fake ``run.py`` that prints the
  real log format.
- ``cuda`` / ``mps`` / ``cpu`` (or ``"auto"`` elsewhere): :mod:`labkit.bert` trains the same
  model on synthetic masked-LM + next-sentence batches and prints the modelzoo's own log
  lines, so the same reader and analysis apply.
- ``log_path``: read a log of a run made on the testbed.
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Dict, List, Optional, Sequence

from labkit import bert, devices, interrupts
from labkit.divergence import divergence_note, loss_divergence
from labkit.interrupts import run_step
from labkit.params import PATH, Config, Param, ParameterError, Spec
from labkit.results import Run

__all__ = [
    "BERT_SPEC", "EXERCISE", "Plan", "plan", "run_bert", "run_portable", "run_modelzoo", "read_log",
    "cerebras_stack", "write_params_yaml", "modelzoo_command", "stream_command", "train_line",
    "processed_line", "standardize", "compare", "comparison_table", "plot_comparison", "metrics_table", "plot_loss",
    "show", "CEREBRAS_HELP",
    "DEFAULT_TEMPLATE",
]

EXERCISE = "cerebras/bert_large"

#: Where the ALCF course keeps its BERT-Large params file (copied into the modelzoo's configs/).
DEFAULT_TEMPLATE = "/software/cerebras/dataset/bert_large/bert_large_MSL128_sampleds.yaml"

#: Most steps one run may ask for: the course runs 1000; the modelzoo's full MSL128 phase 72000.
MAX_STEPS = 100000

#: A portable run estimated to take longer than this is refused unless allow_long_run=True.
LONG_RUN_SECONDS = 2 * 3600


def _existing_file(value: Any) -> Optional[str]:
    if value is None:
        return None
    if not os.path.exists(value):
        return "no such file (relative paths start from {})".format(os.getcwd())
    if not os.path.isfile(value):
        return "not a file"
    return None


def _existing_files(values: Any) -> Optional[str]:
    for value in values or []:
        problem = _existing_file(os.path.expanduser(value))
        if problem:
            return "{!r}: {}".format(value, problem)
    return None


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
    if micro is not None and (micro > config.batch_size or config.batch_size % micro):
        return ("micro_batch_size", "must divide batch_size = {} (gradient accumulation runs batch_size / "
                "micro_batch_size micro-batches per step)".format(config.batch_size))
    return None


BERT_SPEC = Spec(
    EXERCISE,
    Param("batch_size", int, 1024, "samples per optimizer step (the modelzoo's effective batch size)", min=1, max=65536),
    Param("max_steps", int, 1000, "optimizer steps (runconfig.max_steps)", min=1, max=MAX_STEPS),
    Param("log_steps", int, 100, "log every this many steps (runconfig.log_steps)", min=1, max=MAX_STEPS),
    Param("max_seq_length", int, 128, "tokens per sequence (MSL)", min=8, max=512),
    Param("model_size", str, "large", "BERT preset: large on the CS-2; base, mini, tiny, micro elsewhere",
          choices=tuple(bert.MODEL_SIZES)),
    Param("target", str, "auto", "CSX (the modelzoo on a CS-2), cuda, mps, cpu, or auto",
          choices=("auto", "CSX", "cuda", "mps", "cpu")),
    Param("seed", int, 0, "seeds weights, data and dropout (runconfig.seed)", min=0, max=2**31 - 1),
    Param("log_path", PATH, None, "read this CS-2 log instead of training", optional=True, check=_existing_file),
    Param("learning_rate", float, 1e-4, "AdamW learning rate (portable runs)", min=0, min_exclusive=True, max=1.0),
    Param("micro_batch_size", int, None, "gradient-accumulation micro-batch; None lets the CS-2 compiler search",
          optional=True, min=1, max=65536),
    Param("compare_batch_sizes", list, [], "homework: also train at these batch sizes here", item_type=int,
          check=_positive_ints),
    Param("compare_logs", list, [], "homework: CS-2 logs to compare (e.g. runs at 512, 1024, 2048)",
          item_type=PATH, check=_existing_files),
    Param("modelzoo_dir", PATH, None, "modelzoo checkout (found under ~/R_*/modelzoo when None)", optional=True),
    Param("params_template", PATH, None, "params YAML to start from (the course's, when None)", optional=True,
          check=_existing_file),
    Param("model_dir", str, "model_dir_bert_large_pytorch", "where run.py writes checkpoints; each run gets "
          "a new subfolder, so checkpoint autoloading never resumes an old run"),
    Param("allow_long_run", bool, False, "allow a portable run estimated to take over 2 hours"),
    checks=[_log_within_steps, _micro_batch_divides],
)

CEREBRAS_HELP = (
    "The Cerebras path runs the modelzoo's `python run.py CSX ...` on a Cerebras user node. It needs the "
    "`cerebras_pytorch` package (the course: `python3.8 -m venv venv_cerebras_pt; pip install "
    "cerebras_pytorch==<release>`) and a modelzoo checkout (`git clone https://github.com/Cerebras/modelzoo` "
    "and `git checkout Release_<release>`; pass its path as modelzoo_dir, or keep it under ~/R_<release>/modelzoo). "
    "Elsewhere use target='auto', 'cuda', 'mps' or 'cpu' (the portable BERT), or log_path to read a CS-2 log."
)

# Where run.py for BERT sits in the modelzoo, by release (R_1.9-2.3, then 2.4 onwards).
_BERT_DIRS = ("modelzoo/transformers/pytorch/bert", "src/cerebras/modelzoo/models/nlp/bert",
              "transformers/pytorch/bert")


# ---------------------------------------------------------------------------------------------
# Which path: the Cerebras stack, or a torch device.


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


def _candidate_modelzoos(modelzoo_dir: Optional[str]) -> List[str]:
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
    for candidate in _candidate_modelzoos(modelzoo_dir):
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


@dataclass
class Plan:
    """What a run will do: ``path`` is "log", "modelzoo" or "portable"."""

    path: str
    device: Any = None
    stack: Optional[CerebrasStack] = None

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
        return Plan("log")
    if config.target in ("CSX", "auto"):
        stack = cerebras_stack(config.modelzoo_dir)
        if stack.complete:
            _check_template(config, stack)
            return Plan("modelzoo", stack=stack)
        if config.target == "CSX":
            raise devices.DeviceError("target='CSX' was asked for, but the Cerebras stack is not here: {}. {}".format(
                "; ".join(stack.missing), CEREBRAS_HELP))
    device = devices.torch_device("auto" if config.target in ("CSX", "auto") else config.target)
    _check_cost(config, device, sizes)
    return Plan("portable", device=device)


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


# ---------------------------------------------------------------------------------------------
# The modelzoo path (verified only on the testbed).


def _template_path(config: Config, stack: Optional[CerebrasStack]) -> Optional[str]:
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


def _check_template(config: Config, stack: CerebrasStack) -> None:
    template = _template_path(config, stack)
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


#: modelzoo ``model:`` keys for each preset (hidden_size, num_hidden_layers, num_heads, filter_size).
def _modelzoo_model(model_size: str) -> Dict[str, int]:
    preset = bert.MODEL_SIZES[model_size]
    return {"hidden_size": preset["hidden_size"], "num_hidden_layers": preset["num_hidden_layers"],
            "num_heads": preset["num_attention_heads"], "filter_size": preset["intermediate_size"]}


def write_params_yaml(config: Config, template: str, out_path: str) -> Dict[str, Any]:
    """Write the modelzoo params file for ``config``: ``template`` with the run's choices.

    Sets ``train_input.batch_size`` (the effective batch, split over the CS-2s),
    ``train_input.micro_batch_size`` when given (else the compiler searches one),
    ``runconfig.max_steps``, ``log_steps``, ``checkpoint_steps`` (= max_steps: one checkpoint
    at the end, as the course's runs save), ``seed``, and the model's size when it is not
    "large". Everything else (data, vocabulary, optimizer) stays as the template says.
    Returns the params written.
    """
    import yaml

    with open(template) as f:
        params = yaml.safe_load(f) or {}
    train_input = params.setdefault("train_input", {})
    train_input["batch_size"] = config.batch_size
    if config.micro_batch_size is not None:
        train_input["micro_batch_size"] = config.micro_batch_size
    runconfig = params.setdefault("runconfig", {})
    runconfig.update({"max_steps": config.max_steps, "log_steps": config.log_steps,
                      "checkpoint_steps": config.max_steps, "seed": config.seed})
    if config.model_size != "large":
        params.setdefault("model", {}).update(_modelzoo_model(config.model_size))
    with open(out_path, "w") as f:
        yaml.safe_dump(params, f, sort_keys=False)
    return params


def modelzoo_command(params_path: str, model_dir: str, modelzoo_dir: str, python: Optional[str] = None,
                     num_csx: int = 1, num_workers_per_csx: int = 1, mount_dirs: Sequence[str] = ("/home/", "/software/"),
                     compile_dir: Optional[str] = None, job_label: str = "name=bert_pt",
                     mode: str = "train") -> List[str]:
    """The course's ``run.py CSX`` command, as an argument list (run it from BERT's folder).

    The course types::

        python run.py CSX --job_labels name=bert_pt --params configs/bert_large_MSL128_sampleds.yaml
            --num_workers_per_csx=1 --mode train --model_dir $MODEL_DIR --mount_dirs /home/ /software/
            --python_paths /home/$(whoami)/R_2.3.0/modelzoo/ --compile_dir $(whoami)

    labkit adds ``--num_csx=1`` (the default, said out loud). ``--mount_dirs`` are the
    folders the cluster's workers mount (the data set and your home); ``--python_paths``
    lets them import the modelzoo; ``--compile_dir`` keeps your compiles apart from others'.
    """
    if num_csx < 1 or num_workers_per_csx < 1:
        raise ValueError("num_csx and num_workers_per_csx must be at least 1")
    if compile_dir is None:
        compile_dir = _user()
    return [python or sys.executable, "run.py", "CSX",
            "--job_labels", job_label,
            "--params", params_path,
            "--num_csx={}".format(num_csx),
            "--num_workers_per_csx={}".format(num_workers_per_csx),
            "--mode", mode,
            "--model_dir", model_dir,
            "--mount_dirs", *mount_dirs,
            "--python_paths", modelzoo_dir,
            "--compile_dir", compile_dir]


def _user() -> str:
    try:
        import getpass

        return getpass.getuser()
    except Exception:  # no user name in some containers
        return "labkit"


def stream_command(command: Sequence[str], cwd: str, log_path: str, echo: Callable[[str], None] = print,
                   on_line: Optional[Callable[[str], None]] = None, env: Optional[Dict[str, str]] = None) -> int:
    """Run ``command``, streaming each line of its output to ``echo`` and to ``log_path`` (like ``|& tee``).

    stderr is merged into stdout, as the course's ``|&`` does. Returns the exit status. An
    interrupt (the notebook's stop button) stops the child too.
    """
    full_env = dict(os.environ)
    full_env["PYTHONUNBUFFERED"] = "1"  # lines as they happen, not when a buffer fills
    if env:
        full_env.update(env)
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(shlex.quote(part) for part in command) + "\n")
        log.flush()
        try:
            proc = subprocess.Popen(list(command), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, bufsize=1, errors="replace", env=full_env)
        except OSError as exc:
            raise RuntimeError("could not start {!r} in {}: {}".format(command[0], cwd, exc)) from None
        with proc:
            try:
                assert proc.stdout is not None
                for line in proc.stdout:
                    log.write(line)
                    log.flush()
                    text = line.rstrip("\n")
                    echo(text)
                    if on_line is not None:
                        on_line(text)
                return proc.wait()
            except BaseException:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                raise


def run_modelzoo(config: Config, stack: CerebrasStack, workdir: str = ".", python: Optional[str] = None,
                 echo: Callable[[str], None] = print) -> Run:
    """Train on the CS-2: params file, ``run.py CSX``, live log, metrics read from the log."""
    from labkit.progress import bar

    template = _template_path(config, stack)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    workdir = os.path.abspath(workdir)
    os.makedirs(workdir, exist_ok=True)
    params_path = os.path.join(workdir, "params_bert_{}_bs{}_{}.yaml".format(config.model_size, config.batch_size, stamp))
    write_params_yaml(config, template, params_path)
    model_dir = os.path.join(os.path.abspath(config.model_dir), "bs{}-{}".format(config.batch_size, stamp))
    command = modelzoo_command(params_path, model_dir, stack.modelzoo_dir, python=python)
    log_path = os.path.join(workdir, "cerebras-bert-bs{}-{}.log".format(config.batch_size, stamp))
    echo("$ cd {} && {}".format(stack.bert_dir, " ".join(shlex.quote(c) for c in command)))
    progress = bar(total=config.max_steps, desc="CS-2 steps", unit="step")
    done = [0]

    def on_line(line: str) -> None:
        step = _step_of(line)
        if step is not None and step > done[0]:
            progress.update(step - done[0])
            done[0] = step

    try:
        status = stream_command(command, stack.bert_dir, log_path, echo=_writer(progress, echo), on_line=on_line)
    finally:
        progress.close()
    run = read_log(log_path, config)
    run.source = "testbed"
    run.environment.update({"log_path": log_path, "params_path": params_path, "command": command,
                            "modelzoo_dir": stack.modelzoo_dir})
    if status != 0 and run.status == "complete":
        run.status = "failed"
    if status != 0:
        run.notes.append("run.py exited with status {}; the log is {}.".format(status, log_path))
    return run


def _step_of(line: str) -> Optional[int]:
    if "Train Device=" not in line:
        return None
    try:
        return int(line.split("Step=", 1)[1].split(",", 1)[0])
    except (IndexError, ValueError):
        return None


def _writer(progress: Any, echo: Callable[[str], None]) -> Callable[[str], None]:
    """Print above a progress bar (a plain print would break a text bar's line)."""
    if echo is print and hasattr(progress, "write"):
        return lambda text: progress.write(text, file=sys.stdout)
    return echo


# ---------------------------------------------------------------------------------------------
# Reading logs, and the metrics every path reports.


def standardize(run: Run) -> Run:
    """Add the exercise's metric names to a run read from a log (the reader's names stay).

    ``samples_per_sec`` is the last GlobalRate (the modelzoo's average since the first step),
    ``total_samples`` / ``total_time`` come from "Processed N sample(s) in T seconds", and
    ``time_per_sample`` is their ratio.
    """
    m = run.metrics
    rate = m.get("global_rate", m.get("samples_per_s"))
    if rate is not None:
        run.add_metric("samples_per_sec", rate, "samples/s")
    if m.get("samples") is not None:
        run.add_metric("total_samples", m["samples"], "samples")
    if m.get("train_seconds") is not None:
        run.add_metric("total_time", m["train_seconds"], "s")
    if m.get("samples") and m.get("train_seconds"):
        run.add_metric("time_per_sample", m["train_seconds"] / m["samples"], "s")
    elif rate:
        run.add_metric("time_per_sample", 1.0 / rate, "s")
    if "compile_s" in m:
        run.add_metric("compile_time", m["compile_s"], "s")
    return run


def read_log(path: str, config: Optional[Config] = None) -> Run:
    """The run in a modelzoo log, with the exercise's metrics (see :func:`standardize`)."""
    import labkit.logs

    if not os.path.isfile(path):
        raise FileNotFoundError("log_path = {!r}: no such file".format(path))
    report = labkit.logs.read(path, format="cerebras")
    run = standardize(report.run)
    run.exercise = EXERCISE
    run.environment.setdefault("log_path", os.path.abspath(path))
    if config is not None:
        logged = dict(run.params)
        run.params = {"batch_size": logged.get("batch_size", config.batch_size), "log_path": path}
        for key in ("params_file", "mode"):
            if key in logged:
                run.params[key] = logged[key]
    return run


# ---------------------------------------------------------------------------------------------
# The portable path: labkit.bert, printing the modelzoo's log lines.


def _stamp() -> str:
    now = datetime.now()
    return now.strftime("%Y-%m-%d %H:%M:%S") + ",{:03d}".format(now.microsecond // 1000)


def train_line(device: str, step: int, loss: float, rate: float, global_rate: float, stamp: Optional[str] = None) -> str:
    """A modelzoo training log line (``| Train Device=CSX, Step=100, Loss=9.50000, Rate=..., GlobalRate=...``)."""
    return "{} INFO:   | Train Device={}, Step={}, Loss={:.5f}, Rate={:.2f} samples/sec, GlobalRate={:.2f} samples/sec".format(
        stamp or _stamp(), device, step, loss, rate, global_rate)


def processed_line(samples: int, seconds: float, stamp: Optional[str] = None) -> str:
    """The modelzoo's last line: ``Processed N sample(s) in T seconds.``"""
    return "{} INFO:   Processed {} sample(s) in {} seconds.".format(stamp or _stamp(), samples, repr(float(seconds)))


def _info(text: str) -> str:
    return "{} INFO:   {}".format(_stamp(), text)


def run_portable(config: Config, device: Any, batch_size: Optional[int] = None, log_path: Optional[str] = None,
                 echo: Callable[[str], None] = print, progress: bool = True) -> Run:
    """Train the portable BERT as ``config`` says, printing modelzoo-format log lines.

    The lines also go to ``log_path`` when given, so ``labkit.logs`` reads this run as it
    reads a CS-2 log. Returns the run's record; ``warmup_time`` (the first step: allocation,
    kernel selection; the CS-2's compile has no portable analogue) and ``setup_time``
    (building the model) are kept apart from the throughput figures' meaning, though the
    first step counts in GlobalRate as it does in the modelzoo's.
    """
    import torch

    from labkit.progress import bar

    batch_size = batch_size or config.batch_size
    lines: List[str] = []
    log = open(log_path, "w") if log_path else None

    def emit(text: str, out: Callable[[str], None] = echo) -> None:
        lines.append(text)
        if log is not None:
            log.write(text + "\n")
            log.flush()
        out(text)

    try:
        setup_start = time.perf_counter()
        model = bert.build_model(config.model_size, config.max_seq_length, config.seed)
        setup_time = time.perf_counter() - setup_start
        preset = bert.MODEL_SIZES[config.model_size]
        emit(_info("Initializing module BertForPreTraining (labkit portable, transformers): model_size={}, {} layers, "
                   "hidden {}, {} heads, {:.1f}M parameters".format(config.model_size, preset["num_hidden_layers"],
                                                                    preset["hidden_size"], preset["num_attention_heads"],
                                                                    bert.count_parameters(model) / 1e6)))
        emit(_info("Effective batch size is {}.".format(batch_size)))
        if config.micro_batch_size and config.micro_batch_size < batch_size:
            emit(_info("Gradient accumulation: {} micro-batches of {} per step.".format(
                batch_size // config.micro_batch_size, config.micro_batch_size)))
        batches = bert.synthetic_batches(batch_size, config.max_seq_length, model.config.vocab_size, seed=config.seed)
        device_label = getattr(device, "type", str(device)).upper()
        pbar = bar(total=config.max_steps, desc="batch {}".format(batch_size), unit="step") if progress else None
        above_bar = _writer(pbar, echo) if pbar is not None else echo

        def on_log(entry: bert.LogEntry) -> None:
            emit(train_line(device_label, entry.step, entry.loss, entry.rate, entry.global_rate), above_bar)

        try:
            with interrupts.graceful() as stop:
                result = bert.train(model, batches, config.max_steps, config.log_steps, device,
                                    learning_rate=config.learning_rate, micro_batch_size=config.micro_batch_size,
                                    seed=config.seed, on_log=on_log, progress=pbar or False, stop=stop)
        finally:
            if pbar is not None:
                pbar.close()
        if result.interrupted:
            echo(result.interrupted)
        completed = len(result.losses) == config.max_steps
        if completed:
            emit(_info("Training completed successfully!"))
        emit(processed_line(result.total_samples, result.total_time))
    finally:
        if log is not None:
            log.close()

    run = Run(exercise=EXERCISE, source="portable", params=config.to_dict())
    run.params["batch_size"] = batch_size
    run.params["device"] = str(device)
    if result.interrupted:  # stopped by the student: what was measured so far
        run.mark_interrupted(result.interrupted, "its metrics cover only the steps before the interrupt.")
    elif loss_divergence(result.losses):  # bert.train stops early only on a non-finite loss
        run.status = "diverged"
        run.notes.append(divergence_note(result.losses, where="step", advice="Lower learning_rate."))
    _add_metrics(run, result)
    run.add_series("loss", list(range(1, len(result.losses) + 1)), result.losses)
    run.add_series("rate", [e.step for e in result.logs], [e.rate for e in result.logs])
    run.add_series("global_rate", [e.step for e in result.logs], [e.global_rate for e in result.logs])
    run.add_metric("setup_time", round(setup_time, 4), "s")
    run.add_metric("warmup_time", round(result.warmup_time, 4), "s")
    run.environment = devices.environment(device, {"parameters": bert.count_parameters(model)})
    if log_path:
        run.environment["log_path"] = os.path.abspath(log_path)
    run.notes.append("Portable run: {} on synthetic masked-LM + next-sentence batches, not the CS-2. Rate and "
                     "GlobalRate follow the modelzoo's definitions.".format(device))
    del model
    if getattr(device, "type", "") == "cuda":
        torch.cuda.empty_cache()
    return run


def _add_metrics(run: Run, result: bert.TrainResult) -> None:
    """The exercise's metrics, and the log reader's names for the same numbers."""
    last = result.logs[-1] if result.logs else None
    # The last GlobalRate, as a log gives it (at the last step; "Processed ... in T seconds"
    # is taken a moment later, so total_samples / total_time differs in the last digits).
    run.add_metric("samples_per_sec", round(last.global_rate if last else result.global_rate, 2), "samples/s")
    run.add_metric("time_per_sample", result.time_per_sample, "s")
    run.add_metric("final_loss", round(result.final_loss, 5))
    run.add_metric("total_samples", result.total_samples, "samples")
    run.add_metric("total_time", result.total_time, "s")
    run.add_metric("steps", len(result.losses))
    # The same numbers under the names labkit.logs gives a CS-2 log, so tables line up.
    run.add_metric("global_rate", round(last.global_rate, 2) if last else 0.0, "samples/s")
    run.add_metric("last_rate", round(last.rate, 2) if last else 0.0, "samples/s")
    run.add_metric("samples", result.total_samples, "samples")
    run.add_metric("train_seconds", result.total_time, "s")


# ---------------------------------------------------------------------------------------------
# The whole exercise, and the homework's comparison.


@run_step
def run_bert(config: Config, chosen: Optional[Plan] = None, workdir: str = ".", log_path: Optional[str] = None) -> Run:
    """Run the exercise as ``config`` says (see :func:`plan`) and return its record."""
    chosen = chosen or plan(config)
    if chosen.path == "log":
        run = read_log(config.log_path, config)
        for line in (run.notes or []):
            print("Note: " + line)
        return run
    if chosen.path == "modelzoo":
        return run_modelzoo(config, chosen.stack, workdir)
    return run_portable(config, chosen.device, log_path=log_path)


@run_step
def compare(config: Config, chosen: Optional[Plan] = None, runs: Sequence[Run] = (), workdir: str = ".") -> List[Run]:
    """The homework's runs: ``runs`` already made, the ``compare_logs`` read, and one run per
    ``compare_batch_sizes`` entry trained here (on the CS-2 or the portable path); a batch size
    already trained in ``runs`` is not trained again."""
    found = list(runs)
    for path in config.compare_logs:
        found.append(read_log(path, config))
    trained_here = {run.params.get("batch_size") for run in runs if run.source != "log"}
    sizes = [size for size in config.compare_batch_sizes if size not in trained_here]
    if sizes:
        chosen = chosen or plan(config)
        if chosen.path == "log":  # the main run was read; where do the comparison runs train?
            chosen = plan(config.replace(log_path=None, compare_batch_sizes=[]), sizes=sizes)
        for size in sizes:
            if chosen.path == "modelzoo":
                found.append(run_modelzoo(config.replace(batch_size=size), chosen.stack, workdir))
            else:
                found.append(run_portable(config.replace(batch_size=size), chosen.device))
            if found[-1].status == "interrupted":  # the student stopped it: no more runs
                break
    return found


def comparison_table(runs: Sequence[Run]):
    """Throughput and time per sample against batch size, one row per run, sorted by source and batch."""
    import pandas as pd

    rows = []
    for run in runs:
        m = standardize(run).metrics
        rows.append({
            "source": run.source + (" (interrupted: partial)" if run.partial() else ""),
            "device": run.environment.get("device", run.params.get("device", "")),
            "batch_size": run.params.get("batch_size"),
            "samples_per_sec": m.get("samples_per_sec"),
            "time_per_sample_ms": None if m.get("time_per_sample") is None else 1000.0 * m["time_per_sample"],
            "final_loss": m.get("final_loss"),
            "total_samples": m.get("total_samples"),
            "total_time_s": m.get("total_time"),
            "log": os.path.basename(str(run.environment.get("log_path", ""))) if run.source == "log" else "",
        })
    frame = pd.DataFrame(rows)
    if len(frame):
        frame = frame.sort_values(["source", "batch_size"], kind="stable").reset_index(drop=True)
    return frame


def plot_comparison(table: Any):
    """Two panels: samples/s and ms per sample against batch size, one line per source."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for (source, device), group in table.groupby(["source", "device"], sort=True):
        label = "{} ({})".format(source, device) if device else source
        group = group.sort_values("batch_size")
        left.plot(group["batch_size"], group["samples_per_sec"], "o-", label=label)
        right.plot(group["batch_size"], group["time_per_sample_ms"], "o-", label=label)
    for ax, title in ((left, "throughput (GlobalRate)"), (right, "time per sample")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    left.set_ylabel("samples / s")
    right.set_ylabel("ms / sample")
    left.legend(fontsize="small")
    fig.tight_layout()
    return _show_once(fig)


#: Units of the comparison table's columns (for :func:`show`).
TABLE_UNITS = {"samples_per_sec": "samples/s", "time_per_sample_ms": "ms", "total_time_s": "s"}

#: The metrics :func:`metrics_table` shows, in this order.
SHOWN_METRICS = ("samples_per_sec", "time_per_sample", "final_loss", "total_samples", "total_time", "steps",
                 "warmup_time", "setup_time", "compile_time", "last_rate")


def metrics_table(run: Run):
    """The run's main metrics as a table: metric, value, unit."""
    import pandas as pd

    rows = [{"metric": name, "value": run.metrics[name], "unit": run.units.get(name, "")}
            for name in SHOWN_METRICS if name in run.metrics]
    rows[:0] = [{"metric": name, "value": text, "unit": ""} for name, text in run.partial_rows()]
    return pd.DataFrame(rows, columns=["metric", "value", "unit"], dtype=object)  # object: counts stay ints


_COUNT_COLUMNS = ("batch_size", "total_samples", "steps")


def _cell(value: Any, unit: str = "", count: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if count and isinstance(value, float) and value.is_integer():
        value = int(value)  # a pandas column with a gap turns counts into floats
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        text = str(value)
    elif isinstance(value, int):
        text = str(value)
    elif unit in ("samples/s", "samples/sec"):
        text = "{:.2f}".format(value)
    elif unit in ("s", "ms"):
        text = "{:.4f}".format(value)
    else:
        text = "{:.5f}".format(value)
    return text + (" " + unit if unit and text else "")


def show(table: Any, units: Optional[Dict[str, str]] = None):
    """A table for the notebook, with each number next to its unit (``19.91 samples/s``).

    A metrics table (metric, value, unit) shows value and unit together; any other table
    takes its columns' units from ``units`` (the comparison table's by default).
    """
    from IPython.display import HTML

    frame = table.copy()
    if list(frame.columns) == ["metric", "value", "unit"]:
        frame["value"] = [_cell(v, u) for v, u in zip(frame["value"], frame["unit"])]
        frame = frame.drop(columns="unit").set_index("metric")
    else:
        units = TABLE_UNITS if units is None else units
        for column in frame.columns:
            count = column in _COUNT_COLUMNS
            frame[column] = [_cell(v, units.get(column, ""), count) for v in frame[column]]
    return HTML(frame.to_html())


def plot_loss(run: Run):
    """The training loss against the step (every step for a portable run, every log step for a log)."""
    import matplotlib.pyplot as plt

    series = run.series.get("loss")
    fig, ax = plt.subplots(figsize=(6, 3.4))
    if series:
        ax.plot(series["x"], series["y"], "-", marker="o" if len(series["x"]) <= 20 else None)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (masked LM + next sentence)")
    ax.set_title("{} run, batch size {}".format(run.source, run.params.get("batch_size"))
                 + run.partial_title())
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return _show_once(fig)


def _show_once(fig: Any):
    """In a kernel, display ``fig`` now and close it: exactly one copy whatever the matplotlib
    backend (the inline backend would show a still-open figure again at the end of the cell)."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython comes with every kernel
        return fig
    if get_ipython() is not None:
        import matplotlib.pyplot as plt

        display(fig)
        plt.close(fig)
    return fig
