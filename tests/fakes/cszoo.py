"""A stand-in for the Cerebras modelzoo's ``cszoo`` command (Release 2.6) and the CS-3 it drives.

It parses ``cszoo fit`` / ``cszoo validate`` as the modelzoo's CLI does
(src/cerebras/modelzoo/cli/main.py and utils.py ``add_run_args``: a params YAML, ``-o/--model_dir``,
``--job_labels`` (several ``key=value``), ``--job_priority p1|p2|p3``, ``--mount_dirs``,
``--python_paths``, ``--num_csx``, ``--compile_only``, ``--validate_only``, ``--checkpoint_path``,
``--logging``, ``--disable_version_check``, ...; an unknown flag is an error, as its
SmartArgumentParser makes it), reads the params YAML in the 2.6 "trainer" layout
(``trainer.fit.train_dataloader.batch_size``, ``trainer.init.loop.max_steps``,
``trainer.init.logging.log_steps``, ``trainer.init.checkpoint.steps``) or the older "runconfig"
one, and prints the log of the course's sample (tests/fixtures/testbed-logs/cerebras/
upstream-fall2025-llama2-7b-sample-output.log), line for line in its shapes, on a simulated
clock: a fresh compile the first time a params file's model and batch are seen, the cached
compile after; the execute wsjob; the ``| Train Device=CSX, ...`` lines every ``log_steps``; a
checkpoint; ``Processed N training sample(s) in T seconds.`` Checkpoint files are written to the
model dir. Jobs are recorded in $FAKE_CSZOO_STATE/jobs.json for the fake ``csctl``.

Test hooks, through the environment:

- FAKE_CSZOO_STATE=DIR (required): the cluster's state (compile cache, jobs).
- FAKE_CSZOO_STEP_SLEEP=S: real seconds to sleep before each Train line (default 0).
- FAKE_CSZOO_INCONSISTENT=1: print the InconsistentVersion warning the sample shows.
- FAKE_CSZOO_FAIL_AFTER=N: exit with a traceback after the Train line of step N.
"""

import argparse
import hashlib
import json
import os
import sys
import time
from datetime import datetime, timedelta

import yaml


class _Parser(argparse.ArgumentParser):
    def parse_known_args(self, args=None, namespace=None):
        args, unknown = super().parse_known_args(args, namespace)
        if unknown:
            self.error("unrecognized arguments: {}".format(" ".join(unknown)))
        return args, unknown


def parse(argv):
    parser = argparse.ArgumentParser(prog="cszoo", description="Cerebras ModelZoo CLI (fake).")
    sub = parser.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    for name in ("fit", "validate"):
        run = sub.add_parser(name)
        run.add_argument("params")
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
    args = parser.parse_args(argv)
    for label in args.job_labels:
        if "=" not in label:
            parser.error("--job_labels: {!r} is not key=value".format(label))
    return args


def _get(params, *path):
    for key in path:
        if not isinstance(params, dict) or key not in params:
            return None
        params = params[key]
    return params


def settings(params):
    """batch, max_steps, log_steps, checkpoint steps, from either layout."""
    if "trainer" in params:
        batch = _get(params, "trainer", "fit", "train_dataloader", "batch_size")
        steps = _get(params, "trainer", "init", "loop", "max_steps")
        log_steps = _get(params, "trainer", "init", "logging", "log_steps") or 1
        checkpoint = _get(params, "trainer", "init", "checkpoint", "steps") or steps
    else:
        batch = _get(params, "train_input", "batch_size")
        steps = _get(params, "runconfig", "max_steps")
        log_steps = _get(params, "runconfig", "log_steps") or 1
        checkpoint = _get(params, "runconfig", "checkpoint_steps") or steps
    if not isinstance(batch, int) or not isinstance(steps, int):
        sys.exit("cszoo: the params file gives no integer batch_size and max_steps")
    return batch, steps, int(log_steps), int(checkpoint)


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


def main(argv):
    args = parse(argv)
    state = os.environ["FAKE_CSZOO_STATE"]
    os.makedirs(state, exist_ok=True)
    with open(args.params) as f:
        params = yaml.safe_load(f)
    batch, steps, log_steps, checkpoint_steps = settings(params)
    labels = dict(label.split("=", 1) for label in args.job_labels)
    clock = Clock()
    model_key = json.dumps([_get(params, "trainer", "init", "model") or params.get("model"), batch], sort_keys=True)
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
    step_s = 0.5 + batch / 32.5  # a fixed cost per step and a cost per sample: bigger batches amortise the first
    fail_after = int(os.environ.get("FAKE_CSZOO_FAIL_AFTER", "0") or 0)
    os.makedirs(args.model_dir, exist_ok=True)
    done = 0
    for step in range(1, steps + 1):
        clock.advance(step_s)
        done += 1
        if step % log_steps == 0 or step == steps:
            time.sleep(float(os.environ.get("FAKE_CSZOO_STEP_SLEEP", "0") or 0))
            if _jobs(state).get(job, {}).get("phase") == "CANCELLED":
                clock.line("Job {} was cancelled.".format(job), level="ERROR")
                return 1
            rate = batch / step_s
            left = timedelta(seconds=int((steps - step) * step_s))
            clock.line("| Train Device=CSX, Step={}, Loss={:.5f}, Rate={:.2f} samples/sec, GlobalRate={:.2f} "
                       "samples/sec, LoopTimeRemaining={}, TimeRemaining={}".format(
                           step, 10.4 / (1 + step / 150.0), rate, rate, left, left))
            if step == fail_after:
                print("Traceback (most recent call last):\nRuntimeError: the fake CS-3 failed", flush=True)
                _save_job(state, job, "FAILED", labels)
                return 1
        if step % checkpoint_steps == 0 or step == steps:
            clock.line("Saving checkpoint at step {}".format(step))
            clock.advance(464)
            path = os.path.join(args.model_dir, "checkpoint_{}.mdl".format(step))
            open(path, "w").close()
            clock.line("Saved checkpoint {}".format(os.path.relpath(path)))
    clock.advance(11.5)
    clock.line("Training completed successfully!")
    _save_job(state, job, "SUCCEEDED", labels)
    seconds = done * step_s + 900.0
    clock.line("Processed {} training sample(s) in {} seconds.".format(done * batch, round(seconds, 9)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
