"""A stand-in for the Cerebras modelzoo's BERT ``run.py`` (no Cerebras stack can be installed here).

It takes the flags of the modelzoo's CSX command line (``run.py CSX --params ... --mode train
--model_dir ... --mount_dirs ... --python_paths ... --compile_dir ... --num_csx N
--num_workers_per_csx N --job_labels ...``), reads the params YAML the way run.py does
(``train_input.batch_size``, ``runconfig.max_steps`` / ``log_steps`` / ``checkpoint_steps``) and
prints a log in the real format (see the student logs under shared/fixtures/testbed-logs/cerebras),
on a simulated clock. Test hooks, through the environment:

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


def parse(argv):
    parser = argparse.ArgumentParser(prog="run.py")
    parser.add_argument("target_device", choices=["CPU", "GPU", "CSX"])
    parser.add_argument("--params", "-p", required=True)
    parser.add_argument("--mode", "-m", required=True, choices=["train", "eval", "train_and_eval", "eval_all"])
    parser.add_argument("--model_dir", "-o", required=True)
    parser.add_argument("--num_csx", type=int, default=1)
    parser.add_argument("--num_workers_per_csx", type=int, default=0)
    parser.add_argument("--mount_dirs", nargs="+", default=[])
    parser.add_argument("--python_paths", nargs="+", default=[])
    parser.add_argument("--compile_dir", default=None)
    parser.add_argument("--job_labels", nargs="+", default=[])
    parser.add_argument("--compile_only", action="store_true")
    parser.add_argument("--validate_only", action="store_true")
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
