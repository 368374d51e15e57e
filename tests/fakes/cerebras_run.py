"""A stand-in for the Cerebras modelzoo's BERT ``run.py`` (no Cerebras stack can be installed here).

Its command line follows Release 2.3's parser (src/cerebras/modelzoo/common/utils/run/cli_parser.py,
``get_parser``, ``add_general_arguments``, ``add_csx_arguments``, ``add_gpu_arguments``), which
``models/nlp/bert/run.py`` reaches through ``get_params_from_args`` and ``parser.parse_args``, so an
unknown flag exits with status 2:

- the target device is a sub-command (``CPU``, ``GPU``, ``CSX``); the CSX flags (``--num_csx``,
  ``--num_workers_per_csx``, ``-c/--compile_dir``, ``--mount_dirs``, ``--python_paths``,
  ``--job_labels``, ``--compile_only`` / ``--validate_only``, ...) exist on ``CSX`` alone, the GPU
  ones (``--dist_addr`` ...) on ``GPU`` alone;
- ``-p/--params`` and ``-m/--mode`` are required; ``-o/--model_dir`` is optional
  (default ``./model_dir``, made absolute at start-up);
- ``--num_workers_per_csx`` defaults to 1, ``--num_csx`` to 1; ``--compile_only`` and
  ``--validate_only`` are mutually exclusive.

A flag left off the command line leaves the params file's ``runconfig`` value in force
(``update_params_from_args``): ``runconfig.model_dir`` is used when ``--model_dir`` is not given.

It reads the params YAML the way run.py does (``train_input.batch_size``, ``runconfig.max_steps`` /
``log_steps`` / ``checkpoint_steps``) and prints a log in the real format (see the student logs under
shared/fixtures/testbed-logs/cerebras), on a simulated clock. Only a CSX run is simulated: ``CPU`` and
``GPU`` parse, then exit with status 2. Test hooks, through the environment:

- FAKE_RUNPY_HANDSHAKE=PATH: after the first line, wait (up to 10 s) until PATH exists, so a
  test can prove the caller sees lines while the process still runs.
- FAKE_RUNPY_FAIL=1: stop after compiling with a traceback and exit status 1.
"""

import argparse
import os
import sys
import time
from datetime import datetime, timedelta

import yaml


def _general(parser):
    """``add_general_arguments``: every device's flags."""
    parser.add_argument("-p", "--params", required=True)
    parser.add_argument("-m", "--mode", required=True, choices=["train", "eval", "train_and_eval", "eval_all"])
    parser.add_argument("-o", "--model_dir", default=None)  # resolved in main(): runconfig's, else ./model_dir
    parser.add_argument("--checkpoint_path", default=None)
    parser.add_argument("--disable_strict_checkpoint_loading", action="store_true")
    parser.add_argument("--load_checkpoint_states", default="all")
    parser.add_argument("--logging", default="INFO")
    parser.add_argument("--wsc_log_level", nargs="+")
    parser.add_argument("--max_steps", type=int, default=None)
    parser.add_argument("--eval_steps", type=int, default=None)


def _csx(parser):
    """``add_csx_arguments``: the Cerebras system's flags."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--compile_only", action="store_true")
    group.add_argument("--validate_only", action="store_true")
    parser.add_argument("--num_workers_per_csx", default=1, type=int)
    parser.add_argument("-c", "--compile_dir")
    parser.add_argument("--job_labels", nargs="+", default=[])
    parser.add_argument("--job_priority", choices=["p1", "p2", "p3"], default="p2")
    parser.add_argument("--debug_args_path")
    parser.add_argument("--mount_dirs", nargs="+", default=[])
    parser.add_argument("--python_paths", nargs="+", default=[])
    parser.add_argument("--credentials_path")
    parser.add_argument("--mgmt_address")
    parser.add_argument("--job_time_sec", type=int)
    parser.add_argument("--disable_version_check", action="store_true")
    parser.add_argument("--num_csx", default=1, type=int)
    parser.add_argument("--num_wgt_servers", default=24, type=int)
    parser.add_argument("--num_act_servers", default=60, type=int)
    parser.add_argument("--debug_args", nargs="*")
    parser.add_argument("--ini", nargs="*")


def parse(argv):
    parser = argparse.ArgumentParser(prog="run.py")
    devices = parser.add_subparsers(title="Target Device", dest="target_device")
    devices.required = True
    for name in ("CPU", "GPU", "CSX"):
        device = devices.add_parser(name)
        _general(device)
        if name == "GPU":
            device.add_argument("-dist_addr", "--dist_addr", default="localhost:8888")
            device.add_argument("-dist_backend", "--dist_backend", choices=["nccl", "mpi", "gloo"], default="nccl")
            device.add_argument("-init_method", "--init_method", default="env://")
        if name == "CSX":
            _csx(device)
    return parser.parse_args(argv)


class Clock:
    def __init__(self):
        self.now = datetime(2024, 4, 9, 6, 0, 50, 835000)

    def advance(self, seconds):
        self.now += timedelta(seconds=seconds)

    def stamp(self):
        return self.now.strftime("%Y-%m-%d %H:%M:%S") + ",{:03d}".format(self.now.microsecond // 1000)


def main(argv):
    args = parse(argv)
    with open(args.params) as f:
        params = yaml.safe_load(f)
    batch = int(params["train_input"]["batch_size"]) * 1  # effective batch, over num_csx systems
    run = params["runconfig"]
    steps, log_steps = int(run["max_steps"]), int(run["log_steps"])
    args.model_dir = args.model_dir or run.get("model_dir") or os.path.abspath("./model_dir")
    if args.target_device != "CSX":
        print("fake run.py: only a CSX run is simulated (asked for {})".format(args.target_device), file=sys.stderr)
        return 2
    clock = Clock()

    def say(text, seconds=0.0, level="INFO"):
        clock.advance(seconds)
        print("{} {}:   {}".format(clock.stamp(), level, text), flush=True)

    say("Effective batch size is {}.".format(batch))
    handshake = os.environ.get("FAKE_RUNPY_HANDSHAKE")
    if handshake:
        deadline = time.time() + 10
        while not os.path.exists(handshake):
            if time.time() > deadline:
                print("fake run.py: nobody read the first line while it ran", file=sys.stderr, flush=True)
                return 3
            time.sleep(0.02)
    os.makedirs(args.model_dir, exist_ok=True)
    say('No checkpoints were found in "{}".'.format(args.model_dir), 0.03)
    say("Compiling the model. This may take a few minutes.", 15.2)
    say("compile job id: wsjob-fakecompile0000000000, remote log path: /n1/wsjob/workdir/job-operator/wsjob-fakecompile0000000000", 2.0)
    say("Ingress is ready: Job ingress ready, poll ingress success.", 30.0)
    if os.environ.get("FAKE_RUNPY_FAIL"):
        print("Traceback (most recent call last):", flush=True)
        print("RuntimeError: Compile failed: not enough memory for the chosen micro batch size", flush=True)
        return 1
    say("Compile artifacts successfully written to remote compile directory. Compile hash is: cs_1234567890", 4.2)
    say("Compile was successful!", 0.01)
    say("Programming Cerebras Wafer Scale Cluster for execution. This may take a few minutes.", 0.01)
    say("execute job id: wsjob-fakeexecute000000000, remote log path: /n1/wsjob/workdir/job-operator/wsjob-fakeexecute000000000", 2.0)
    say("Preparing to execute using {} CSX".format(args.num_csx), 20.0)
    say("Beginning appliance run", 170.0)
    # Throughput grows with the batch (the homework's finding), with a little jitter.
    true_rate = 3000.0 * (batch / 512.0) ** 0.4
    elapsed, previous, done = 0.0, None, 0
    window_samples, window_time = 0, 0.0
    for step in range(1, steps + 1):
        seconds = batch / (true_rate * (1.0 + 0.02 * ((step * 7) % 5 - 2)))
        clock.advance(seconds)
        elapsed += seconds
        window_time += seconds
        window_samples += batch
        done += batch
        if step % log_steps == 0 or step == steps:
            current = window_samples / window_time
            rate = current if previous is None else 0.6 * current + 0.4 * previous
            previous = rate
            window_samples, window_time = 0, 0.0
            loss = 7.0 + 3.0 / step ** 0.5
            print("{} INFO:   | Train Device=CSX, Step={}, Loss={:.5f}, Rate={:.2f} samples/sec, GlobalRate={:.2f} "
                  "samples/sec".format(clock.stamp(), step, loss, rate, done / elapsed), flush=True)
    checkpoint = os.path.join(args.model_dir, "checkpoint_{}.mdl".format(steps))
    open(checkpoint, "w").close()
    say("Saving checkpoint at step {}".format(steps))
    say("Saved checkpoint {}".format(checkpoint), 35.0)
    say("Training completed successfully!", 37.9)
    say("Processed {} sample(s) in {} seconds.".format(done, repr(elapsed)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
