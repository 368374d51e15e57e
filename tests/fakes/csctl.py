"""A stand-in for Cerebras' ``csctl`` cluster tool, the two commands the course gives.

``csctl get jobs`` lists the jobs the fake ``cszoo`` recorded in $FAKE_CSZOO_STATE/jobs.json that
have not ended (NAME, PHASE, LABELS); ``csctl cancel job <wsjob id>`` marks a running job
CANCELLED (the fake ``cszoo`` stops at its next report) and appends the id to
$FAKE_CSZOO_STATE/cancelled.log, so a test can see the call. An unknown job is an error (exit 1).
The course's README (05-AITestbed/Cerebras/README.md) gives only the command lines; what the
real tool prints is not documented there, so labkit relies on the exit status alone.

``csctl``'s source is not public: it ships with the Cerebras cluster, not in Cerebras/modelzoo,
cerebras-pytorch or cerebras-appliance (whose protobufs define its job phases, CREATED ... CANCELLED,
but no command line). So this fake cannot be traced to the vendor's code; the job ids and the log
lines around a cancel stay those of the real logs (the fake ``cszoo`` replays them).
"""

import argparse
import json
import os
import sys


def main(argv):
    parser = argparse.ArgumentParser(prog="csctl")
    sub = parser.add_subparsers(dest="verb", required=True)
    get = sub.add_parser("get")
    get.add_argument("kind", choices=["jobs", "job"])
    cancel = sub.add_parser("cancel")
    cancel.add_argument("kind", choices=["job"])
    cancel.add_argument("job_id")
    args = parser.parse_args(argv)
    state = os.environ["FAKE_CSZOO_STATE"]
    path = os.path.join(state, "jobs.json")
    jobs = json.load(open(path)) if os.path.exists(path) else {}
    if args.verb == "get":
        print("NAME                          PHASE      LABELS")
        for name, job in jobs.items():
            if job["phase"] == "RUNNING":
                labels = ",".join("{}={}".format(k, v) for k, v in job["labels"].items())
                print("{:<29} {:<10} {}".format(name, job["phase"], labels))
        return 0
    if args.job_id not in jobs:
        print("Error: job {} not found".format(args.job_id), file=sys.stderr)
        return 1
    with open(os.path.join(state, "cancelled.log"), "a") as f:
        f.write(args.job_id + "\n")
    if jobs[args.job_id]["phase"] == "RUNNING":
        jobs[args.job_id]["phase"] = "CANCELLED"
        with open(path, "w") as f:
            json.dump(jobs, f)
    print("Job canceled successfully")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
