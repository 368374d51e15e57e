"""A stand-in for the Cerebras modelzoo's ``cszoo`` command (Release 2.10.0, ALCF's; its CLI, validation and
progress lines are the same code in 2.6) and the CS-3 it drives.

Written from Cerebras/modelzoo's source, checked where it can run against the real modelzoo 2.10 on
the CPU backend (docs/cerebras.md; the real CPU log is
tests/fixtures/testbed-logs/cerebras/modelzoo-2.10-cpu-tiny-llama-fit.log):

- The command line, cli/main.py ``ModelZooCLI`` and cli/utils.py ``add_run_args``: ``fit`` runs
  mode train_and_eval, ``validate`` an eval-only run (mode eval), ``validate_all`` mode eval_all;
  config validation is ``cszoo config validate PARAMS`` (cli/config_mgmt_cli.py). Each takes a
  params YAML, ``--target_device CSX|CPU|GPU``, ``-o/--model_dir``, ``--job_labels`` (several),
  ``--job_priority p1|p2|p3``, ``--mount_dirs``, ``--python_paths``, ``--num_csx``,
  ``--compile_only``, ``--validate_only``, ``--checkpoint_path``, ``--logging``,
  ``--debug_args k=v``, ``--ini k=v``, ...; an unknown flag exits with status 2 (its
  ``SmartArgumentParser``).
- Before anything runs, the params are validated as trainer/validate.py
  ``validate_trainer_params`` does (tests/fakes/cszoo_config.py: the checks, the
  ``ValidationError`` text, exit status 1), and a mode whose section is missing fails as
  trainer/utils.py ``run_trainer`` fails.
- Job labels are checked as cerebras_appliance's cluster_config.py ``_JobLabels.sanitize`` checks
  them: ``key=value``, each part matching its regex, else ``ValueError`` (exit status 1).
- The Train lines are trainer/loggers/progress.py ``ProgressLogger``'s: rates below 1/s with
  ``.3g`` (``format_rate``), ``TimeRemaining>`` while a stage still to come (an eval) has no
  measured duration (``format_time_remaining``, callbacks/profiler.py
  ``DurationProfiler.time_remaining``), and while the run has a checkpoint schedule
  (``trainer.init.checkpoint.steps``, callbacks/run_schedule.py ``checkpoint_schedule``) and no
  checkpoint has been timed yet (``if self.schedule.checkpoint_schedule and not
  self.checkpoint_durations: stages_missing_duration.add("checkpoint")``); else ``=``. Without
  ``checkpoint.steps`` no checkpoint is saved (callbacks/checkpoint.py ``on_train_batch_end``:
  ``if self.steps``). The course's 2025 sample, made by an older client (its job image is 2.5.1),
  prints ``=`` before its checkpoint; the fake follows the 2.10 source, not the sample.
- A fit that fails still prints ``Processed N training sample(s) in T seconds.``, the samples of
  the steps done, before the traceback: trainer/trainer.py ``on_exception("fit")`` calls each
  callback's ``on_fit_exception``, and progress.py's is ``self.on_fit_end(trainer, None)``.
- ``--checkpoint_path=.../checkpoint_N.mdl`` restarts at global step N (the file must exist) and
  trains to ``max_steps``; ``--num_csx`` is said in ``Preparing to execute using N CSX``.
- The client checks the cluster's release (cerebras_appliance 2.10, utils/misc.py
  ``version_check``): another release raises ``ApplianceVersionError`` with its real text.
- ``fit`` with a ``val_dataloader`` validates after every ``eval_frequency`` steps and at the end
  (``| Eval Device=CSX, GlobalStep=N, Batch=k, ...``, ``Evaluation completed successfully!``);
  ``Training completed successfully!`` ends each train loop; the ``Processed N training sample(s)``
  line (``on_fit_end``) ends a fit, never a ``validate``.

It reads the params YAML in the 2.6/2.10 "trainer" layout (``trainer.fit.train_dataloader.batch_size``,
``trainer.init.loop.max_steps``, ``trainer.init.logging.log_steps``, ``trainer.init.checkpoint.steps``)
or the older "runconfig" one, for LLaMA or BERT (``trainer.init.model.name: bert``: its eval metrics are
those of ALCF's BERT-Large sample, user-guides docs/ai-testbed/cerebras/example-programs.md), and
prints the log of the course's sample (tests/fixtures/testbed-logs/cerebras/
upstream-fall2025-llama2-7b-sample-output.log), line for line in its shapes, on a
simulated clock: a fresh compile the first time a params file's model and batch are seen, the
cached compile after; the execute wsjob; the Train lines every ``log_steps``; a checkpoint;
``Processed N training sample(s) in T seconds.`` Checkpoint files are written to the model dir.
Jobs are recorded in $FAKE_CSZOO_STATE/jobs.json for the fake ``csctl``. Only a CS-3 is simulated:
a run on the CPU or GPU backend (``--target_device``, else ``backend_type``) exits with status 2.

Test hooks, through the environment:

- FAKE_CSZOO_STATE=DIR (required): the cluster's state (compile cache, jobs).
- FAKE_CSZOO_STEP_SLEEP=S: real seconds to sleep before each Train line (default 0).
- FAKE_CSZOO_INCONSISTENT=1: print the InconsistentVersion warning the sample shows.
- FAKE_CSZOO_FAIL_AFTER=N: exit with a traceback after the Train line of step N.
- FAKE_CSZOO_CLIENT_RELEASE=R: the venv's release (default 2.10.0, the cluster's), to see the version check.
"""

import argparse
import hashlib
import json
import os
import re
import sys
import time
from datetime import datetime, timedelta

import yaml

if __package__:  # imported by a test: the sibling through its package, sys.path left alone
    from . import cszoo_config
else:  # run as a script (the `cszoo` wrapper on PATH): the sibling beside it. Only here: in a test
    # process the fakes' folder on sys.path would make its groqflow/ folder a namespace package
    # that shadows the GroqFlow fake and the real GroqFlow alike.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import cszoo_config  # noqa: E402


#: The cluster's release (ALCF's CS-3 in 2026).
CLUSTER_RELEASE = "2.10.0"


class _Parser(argparse.ArgumentParser):
    """cli/main.py ``SmartArgumentParser``: a sub-command's unknown flag is an error."""

    def parse_known_args(self, args=None, namespace=None):
        args, unknown = super().parse_known_args(args, namespace)
        if unknown:
            self.error("unrecognized arguments: {}".format(" ".join(unknown)))
        return args, unknown


class _ParseKV(argparse.Action):
    """cli/utils.py ``add_run_args.ParseKV``: ``key=value`` pairs into a dict."""

    def __call__(self, parser, namespace, values, option_string=None):
        found = getattr(namespace, self.dest, None) or {}
        for value in values:
            key, value = value.split("=", 1)
            found[key] = value
        setattr(namespace, self.dest, found)


def _run_args(run):
    """cli/utils.py ``add_run_args`` (its flags and defaults)."""
    run.add_argument("params")
    run.add_argument("--target_device", choices=["CSX", "CPU", "GPU"])
    run.add_argument("-o", "--model_dir", default=os.path.abspath("./model_dir"))
    run.add_argument("--checkpoint_path", default=None)
    run.add_argument("--load_checkpoint_states", default="all")
    run.add_argument("--logging", default="INFO")
    run.add_argument("--compile_only", action="store_true")
    run.add_argument("--validate_only", action="store_true")
    run.add_argument("--job_labels", nargs="+", default=[])
    run.add_argument("--job_priority", choices=["p1", "p2", "p3"], default="p2")
    run.add_argument("--mount_dirs", nargs="+", default=[])
    run.add_argument("--python_paths", nargs="+", default=[])
    run.add_argument("--credentials_path")
    run.add_argument("--mgmt_address")
    run.add_argument("--disable_version_check", action="store_true")
    run.add_argument("--num_csx", default=1, type=int)
    run.add_argument("--debug_args", nargs="*", action=_ParseKV)
    run.add_argument("--debug_args_path")
    run.add_argument("--ini", nargs="*", action=_ParseKV)
    run.add_argument("--mgmt_namespace", help=argparse.SUPPRESS)


def parse(argv):
    """cli/main.py ``ModelZooCLI.__init__``: fit (mode train_and_eval), validate (eval), validate_all
    (eval_all), and cli/config_mgmt_cli.py's ``config validate CONFIG``."""
    parser = argparse.ArgumentParser(prog="cszoo", description="Cerebras ModelZoo CLI (fake).")
    sub = parser.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    for name, mode in (("fit", "train_and_eval"), ("validate", "eval"), ("validate_all", "eval_all")):
        _run_args(sub.add_parser(name))
        sub.choices[name].set_defaults(mode=mode)
    config = sub.add_parser("config")
    actions = config.add_subparsers(dest="action", required=True)
    actions.add_parser("validate").add_argument("config")
    return parser.parse_args(argv)


def _get(params, *path):
    for key in path:
        if not isinstance(params, dict) or key not in params:
            return None
        params = params[key]
    return params


def settings(params):
    """batch, max_steps, log_steps, checkpoint steps (None: no checkpoint schedule), from either layout."""
    if "trainer" in params:
        batch = _get(params, "trainer", "fit", "train_dataloader", "batch_size")
        steps = _get(params, "trainer", "init", "loop", "max_steps")
        log_steps = _get(params, "trainer", "init", "logging", "log_steps") or 1
        checkpoint = _get(params, "trainer", "init", "checkpoint", "steps")
    else:
        batch = _get(params, "train_input", "batch_size")
        steps = _get(params, "runconfig", "max_steps")
        log_steps = _get(params, "runconfig", "log_steps") or 1
        checkpoint = _get(params, "runconfig", "checkpoint_steps")
    if not isinstance(batch, int) or not isinstance(steps, int):
        sys.exit("cszoo: the params file gives no integer batch_size and max_steps")
    # run_schedule.py: the schedule's step is min(checkpoint.steps, the steps to train); none without steps
    return batch, steps, int(log_steps), min(int(checkpoint), steps) if checkpoint else None


class Clock:
    def __init__(self):
        self.now = datetime(2025, 10, 13, 14, 47, 37, 651000)

    def advance(self, seconds):
        self.now += timedelta(seconds=seconds)

    def line(self, text, level="INFO"):
        stamp = self.now.strftime("%Y-%m-%d %H:%M:%S") + ",{:03d}".format(self.now.microsecond // 1000)
        print("{} {}:   {}".format(stamp, level, text), flush=True)


def _job_id(seed):
    return "wsjob-" + hashlib.sha1(seed.encode()).hexdigest()[:22]


def _jobs(state):
    path = os.path.join(state, "jobs.json")
    with open(path) if os.path.exists(path) else open(os.devnull) as f:
        text = f.read()
    return json.loads(text) if text else {}


def _save_job(state, job, phase, labels):
    jobs = _jobs(state)
    jobs[job] = {"phase": phase, "labels": labels}
    with open(os.path.join(state, "jobs.json"), "w") as f:
        json.dump(jobs, f)


def _compile(clock, state, key):
    cache = os.path.join(state, "compiles.json")
    known = json.load(open(cache)) if os.path.exists(cache) else []
    digest = "cs_" + str(int(hashlib.sha1(key.encode()).hexdigest()[:15], 16))
    if key in known:
        clock.line('Found existing cached compile with hash: "{}"'.format(digest))
        clock.advance(3.4)
    else:
        clock.line("Compiling the model. This may take a few minutes.")
        clock.line("Initiating a new compile wsjob against the cluster server.")
        job = _job_id("compile" + key + str(time.time()))
        clock.line("Job id: {}, workflow id: wflow-fakeworkflow000000000000, namespace: job-operator, remote log "
                   "path: /n1/wsjob/workdir/job-operator/{}".format(job, job))
        clock.advance(20)
        clock.line("Poll ingress status: Waiting for job running, current job status: Scheduled, msg: job is scheduled.")
        clock.advance(10)
        clock.line("Poll ingress success: Job ingress ready, dashboard: https://grafana.fake/d/x?var-wsjob={}".format(job))
        clock.line("Pre-optimization transforms...")
        clock.advance(900)
        known.append(key)
        with open(cache, "w") as f:
            json.dump(known, f)
    clock.line("Compile artifacts successfully written to remote compile directory. Compile hash is: {}".format(digest))
    clock.advance(5.8)
    clock.line("Compile was successful!")


def format_rate(rate):
    """trainer/loggers/progress.py ``ProgressLogger.format_rate``: ``.3g`` below 1/s, else two decimals."""
    return "{:.3g} samples/sec".format(rate) if rate < 1.0 else "{:.2f} samples/sec".format(rate)


def _fail(kind, message):
    """An uncaught exception, as Python prints it on stderr (exit status 1)."""
    print("Traceback (most recent call last):\n  File \"cszoo\", line 8, in <module>\n{}: {}".format(kind, message),
          file=sys.stderr, flush=True)
    return 1


def _check(params, mode):
    """trainer/validate.py ``validate_trainer_params`` then trainer/utils.py ``run_trainer``'s section check."""
    try:
        problems = cszoo_config.config_problems(params)
    except KeyError as exc:
        return _fail("KeyError", '"{}"'.format(exc.args[0]))
    if problems:
        print("Traceback (most recent call last):\n  File \"cszoo\", line 8, in <module>\n" +
              cszoo_config.format_validation_error(problems), file=sys.stderr, flush=True)
        return 1
    missing = cszoo_config.missing_section(params, mode) if "trainer" in params else None
    return _fail("RuntimeError", missing) if missing else None


def _label_problem(labels):
    """cerebras_appliance's cluster_config.py ``_JobLabels.sanitize`` (2.10): key=value, each matching its regex."""
    pattern = r"^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$"
    for pair in labels:
        tokens = pair.split("=")
        if len(tokens) != 2:
            return ("'{}' is an invalid label. Expecting the label key and the label value to be separated by a "
                    "single equal sign(=) character.".format(pair))
        if any(re.match(pattern, token) is None for token in tokens):
            return "'{}' is an invalid label. Expecting the label key and the label value to match regex '{}'.".format(
                pair, pattern)
    return None


def validate_config(path):
    """cli/config_mgmt_cli.py ``config_validate`` -> trainer/validate_configs.py ``validate_config``: silent on
    success (its "Config validation was successful!" is a logging.info under the default WARNING level)."""
    if not os.path.exists(path):
        return _fail("FileNotFoundError", "File {} not found".format(path))
    with open(path) as f:
        params = yaml.safe_load(f)
    return _check(params, None) or 0


def _eval_points(params, steps, mode):
    """The global steps after which the fit validates: every ``eval_frequency`` steps and at the end, when the fit
    has a ``val_dataloader`` (cli/main.py: ``cszoo fit`` is mode train_and_eval)."""
    if mode != "train_and_eval" or not _get(params, "trainer", "fit", "val_dataloader"):
        return []
    every = _get(params, "trainer", "init", "loop", "eval_frequency") or steps
    return sorted(set(list(range(every, steps + 1, every)) + [steps]))


def _evaluate(clock, params, step, log_steps, device="CSX"):
    """An eval loop's lines (trainer/loggers/progress.py ``print_validation_progress``, ``on_validate_end``)."""
    batches = int(_get(params, "trainer", "init", "loop", "eval_steps") or 1)
    batch = _get(params, "trainer", "fit", "val_dataloader", "batch_size") or 1
    loss = 10.4 / (1 + step / 150.0) + 0.01
    for number in range(1, batches + 1):
        clock.advance(batch / 40.0)
        if number % log_steps == 0 or number == batches:
            clock.line("| Eval Device={}, GlobalStep={}, Batch={}, Loss={:.5f}, Rate={}, GlobalRate={}, "
                       "LoopTimeRemaining={}, TimeRemaining={}".format(
                           device, step, number, loss, format_rate(40.0), format_rate(40.0),
                           timedelta(seconds=int((batches - number) * batch / 40.0)),
                           timedelta(seconds=int((batches - number) * batch / 40.0))))
    clock.line("Avg Eval Loss: {}".format(loss))
    clock.line("Evaluation metrics:")
    if _get(params, "trainer", "init", "model", "name") == "bert":  # ALCF's BERT-Large sample's three metrics
        clock.line("  - eval/accuracy_cls = 0.5")
        clock.line("  - eval/accuracy_masked_lm = 0.0")
        clock.line("  - eval/mlm_perplexity = {}".format(2.718281828 ** loss))
    else:
        clock.line("  - eval/lm_perplexity = {}".format(2.718281828 ** loss))
        clock.line("  - eval/accuracy = 0.0")
    clock.line("Evaluation completed successfully!")


def main(argv):
    args = parse(argv)
    if args.cmd == "config":
        return validate_config(args.config)
    state = os.environ["FAKE_CSZOO_STATE"]
    os.makedirs(state, exist_ok=True)
    with open(args.params) as f:
        params = yaml.safe_load(f)
    failed = _check(params, args.mode)
    if failed:
        return failed
    device = args.target_device or _get(params, "trainer", "init", "backend", "backend_type") or \
        _get(params, "trainer", "init", "device")
    if device != "CSX":
        print("fake cszoo: only a CS-3 (CSX) is simulated; this run asks for {}".format(device), file=sys.stderr)
        return 2
    label_problem = _label_problem(args.job_labels)
    if label_problem:
        return _fail("ValueError", label_problem)
    batch, steps, log_steps, checkpoint_steps = settings(params)
    labels = dict(label.split("=", 1) for label in args.job_labels)
    start = 0
    if args.checkpoint_path:
        if not os.path.exists(args.checkpoint_path):
            return _fail("FileNotFoundError", "Checkpoint path {} does not exist".format(args.checkpoint_path))
        found = re.search(r"checkpoint_(\d+)\.mdl$", args.checkpoint_path)
        start = int(found.group(1)) if found else 0
    clock = Clock()
    client = os.environ.get("FAKE_CSZOO_CLIENT_RELEASE") or CLUSTER_RELEASE
    if client != CLUSTER_RELEASE:  # cerebras_appliance utils/misc.py version_check, a release mismatch
        return _fail("cerebras.appliance.errors.ApplianceVersionError",
                     "CLUSTER_SERVER has version: {} but client has {}.\nIn order to use this cluster, you must "
                     "install {} of the client.\n".format(CLUSTER_RELEASE, client, CLUSTER_RELEASE))
    model_key = json.dumps([_get(params, "trainer", "init", "model") or params.get("model"), batch, args.mode],
                           sort_keys=True)
    _compile(clock, state, model_key)
    if args.compile_only:
        return 0
    clock.line("Waiting for weight initialization to complete")
    clock.line("Programming Cerebras Wafer Scale Cluster for execution. This may take a few minutes.")
    clock.advance(2.1)
    clock.line("Initiating a new execute wsjob against the cluster server.")
    job = _job_id("execute" + model_key + str(time.time()))
    _save_job(state, job, "RUNNING", labels)
    clock.line("Job id: {}, workflow id: wflow-fakeworkflow000000000000, namespace: job-operator, remote log path: "
               "/n1/wsjob/workdir/job-operator/{}".format(job, job))
    clock.advance(20)
    clock.line("Poll ingress status: Waiting for all Activation pods to be running, current running: 0/24.")
    if os.environ.get("FAKE_CSZOO_INCONSISTENT"):
        clock.line("Event {} +0000 UTC reason=InconsistentVersion wsjob={} message='Warning: job image version "
                   "2.5.1-202507111115-6-48e76807 is inconsistent with cluster server version "
                   "3.0.1-202508200300-150-bba1322a+bba1322aed, there's a risk job could fail due to inconsistent "
                   "setup.'".format(clock.now.strftime("%Y-%m-%d %H:%M:%S"), job), level="WARNING")
    clock.advance(30)
    clock.line("Poll ingress success: Job ingress ready, dashboard: https://grafana.fake/d/x?var-wsjob={}".format(job))
    clock.line("Preparing to execute using {} CSX".format(args.num_csx))
    clock.advance(49)
    clock.line("Finalizing appliance staging for the run")
    clock.advance(234)
    clock.line("Appliance staging is complete")
    clock.line("Beginning appliance run")
    if args.mode in ("eval", "eval_all"):  # `cszoo validate`: an eval-only run, no training, no Processed line
        _evaluate(clock, params, 0, log_steps)
        _save_job(state, job, "SUCCEEDED", labels)
        return 0
    step_s = 0.5 + batch / 32.5  # a fixed cost per step and a cost per sample: bigger batches amortise the first
    fail_after = int(os.environ.get("FAKE_CSZOO_FAIL_AFTER", "0") or 0)
    evals = _eval_points(params, steps, args.mode)
    os.makedirs(args.model_dir, exist_ok=True)
    done = 0
    timed_checkpoint = False

    def fit_end():
        """progress.py ``on_fit_end``, also run by ``on_fit_exception`` when the fit fails."""
        seconds = done * step_s + 900.0
        clock.line("Processed {} training sample(s) in {} seconds.".format(done * batch, round(seconds, 9)))

    for step in range(start + 1, steps + 1):
        clock.advance(step_s)
        done += 1
        if step % log_steps == 0 or step == steps:
            time.sleep(float(os.environ.get("FAKE_CSZOO_STEP_SLEEP", "0") or 0))
            if _jobs(state).get(job, {}).get("phase") == "CANCELLED":
                clock.line("Job {} was cancelled.".format(job), level="ERROR")
                fit_end()
                return 1
            rate = batch / step_s
            left = timedelta(seconds=int((steps - step) * step_s))
            # profiler.py DurationProfiler.time_remaining: a stage still to come without a measured duration (an
            # eval not yet run), or a checkpoint schedule with no checkpoint timed yet, makes the estimate a lower
            # bound, printed `>` (progress.py format_time_remaining)
            missing = [e for e in evals if e >= step] or (checkpoint_steps and not timed_checkpoint)
            bound = ">" if missing else "="
            clock.line("| Train Device=CSX, Step={}, Loss={:.5f}, Rate={}, GlobalRate={}, LoopTimeRemaining={}, "
                       "TimeRemaining{}{}".format(step, 10.4 / (1 + step / 150.0), format_rate(rate),
                                                  format_rate(rate), left, bound, left))
            if step == fail_after:
                fit_end()
                print("Traceback (most recent call last):\nRuntimeError: the fake CS-3 failed", flush=True)
                _save_job(state, job, "FAILED", labels)
                return 1
        if checkpoint_steps and (step % checkpoint_steps == 0 or step == steps):
            timed_checkpoint = True
            clock.line("Saving checkpoint at step {}".format(step))
            clock.advance(464)
            path = os.path.join(args.model_dir, "checkpoint_{}.mdl".format(step))
            open(path, "w").close()
            clock.line("Saved checkpoint {}".format(os.path.relpath(path)))
        if step in evals or step == steps:
            clock.advance(11.5 if step == steps else 0)
            clock.line("Training completed successfully!")  # progress.py on_train_end: at the end of each train loop
        if step in evals:
            _evaluate(clock, params, step, log_steps)
    _save_job(state, job, "SUCCEEDED", labels)
    fit_end()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
