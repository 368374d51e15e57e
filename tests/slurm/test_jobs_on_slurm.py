"""labkit.jobs against a real single-node Slurm (Debian slurm-wlm, started by the fixture)."""

import subprocess
from pathlib import Path

import pytest

from labkit import interrupts, jobs

pytestmark = pytest.mark.usefixtures("slurm_cluster")


@pytest.fixture
def limits(slurm_cluster):
    return jobs.ClusterLimits.from_slurm(slurm_cluster.partition)


def test_limits_are_read_from_sinfo(slurm_cluster, limits):
    assert (limits.nodes, limits.cpus_per_node, limits.rdus_per_node) == (1, slurm_cluster.cpus, slurm_cluster.rdus)


def test_a_valid_request_runs_and_its_output_is_found(tmp_path, limits):
    request = jobs.SlurmRequest(ntasks=2, ntasks_per_node=2, nodes=1, cpus_per_task=1, gres="rdu:1",
                                job_name="labkit-ok", output="out-%j.txt", export={"LABKIT_GREETING": "hi"})
    job = jobs.submit_script(request, ['echo "tasks=$SLURM_NTASKS per_node=$SLURM_NTASKS_PER_NODE $LABKIT_GREETING"',
                                       "srun echo task-ran"], str(tmp_path / "job.sh"), limits=limits)
    status = jobs.follow(job, poll=0.3, timeout=60)
    assert status.state == "COMPLETED" and status.exit_code == 0 and status.succeeded
    out = jobs.output_path(job, status)
    assert out == str(tmp_path / "out-{}.txt".format(job.job_id))
    lines = Path(out).read_text().splitlines()
    assert lines[0] == "tasks=2 per_node=2 hi"
    assert lines[1:] == ["task-ran", "task-ran"]  # srun started both tasks


def test_a_failing_job_is_reported_failed_with_its_exit_code(tmp_path):
    job = jobs.submit_script(jobs.SlurmRequest(ntasks=1), ["echo before", "exit 3"], str(tmp_path / "fail.sh"))
    status = jobs.follow(job, poll=0.3, timeout=60, show=False)
    assert (status.state, status.exit_code, status.succeeded) == ("FAILED", 3, False)
    assert Path(jobs.output_path(job)).read_text() == "before\n"  # default slurm-%j.out in the submit dir


def test_follow_counts_what_the_job_reached(tmp_path):
    progress = tmp_path / "steps.txt"
    job = jobs.submit_script(jobs.SlurmRequest(ntasks=1), ["for i in 1 2 3; do echo $i >> {}; sleep 0.5; done".format(
        progress)], str(tmp_path / "steps.sh"))
    seen = []

    def reached(status: jobs.JobStatus) -> int:
        seen.append(status.state)
        return len(progress.read_text().split()) if progress.exists() else 0

    status = jobs.follow(job, poll=0.2, timeout=60, reached=reached, total=3)
    assert status.succeeded and seen[-1] == "COMPLETED" and len(seen) >= 2
    assert reached(status) == 3


def test_an_interrupt_stops_following_not_the_job(tmp_path):
    job = jobs.submit_script(jobs.SlurmRequest(ntasks=1), ["sleep 60"], str(tmp_path / "long.sh"))

    def interrupted_while_polling(status: jobs.JobStatus) -> int:
        raise KeyboardInterrupt

    try:
        with pytest.raises(interrupts.Interrupted) as caught:
            jobs.follow(job, poll=0.2, timeout=60, reached=interrupted_while_polling, log_hint="its log: out.txt")
        assert str(caught.value) == ("interrupted: stopped following job {0}, which keeps running (`scancel {0}` "
                                     "stops it; its log: out.txt)".format(job.job_id))
        assert not jobs.job_status(job).finished
    finally:
        subprocess.run(["scancel", job.job_id], check=False)


def test_an_impossible_request_is_refused_by_slurm_itself(tmp_path, limits):
    script = tmp_path / "never.sh"
    script.write_text("#!/bin/bash\necho should never run\n")
    request = jobs.SlurmRequest(ntasks=limits.cpus_per_node * 2, ntasks_per_node=limits.cpus_per_node * 2, nodes=1)
    with pytest.raises(jobs.JobRequestError, match="CPUs per node, more than a node"):
        jobs.submit(request, str(script), cwd=str(tmp_path), limits=limits)
    with pytest.raises(jobs.JobRejected) as caught:  # without labkit's check, sbatch says no
        jobs.submit(request, str(script), cwd=str(tmp_path), check=False)
    assert caught.value.message.startswith("sbatch: error: Batch job submission failed:")
    assert list(tmp_path.iterdir()) == [script]  # nothing ran, no output file


def test_environment_placed_before_srun_reaches_the_tasks():
    line = jobs.srun_command(["printenv", "LABKIT_PROBE"], env={"LABKIT_PROBE": "before srun"},
                             request=jobs.SlurmRequest(ntasks=1))
    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=60)
    assert done.stdout == "before srun\n", done.stderr
    argv = jobs.srun_argv(["printenv", "LABKIT_PROBE"], env={"LABKIT_PROBE": "exported"})
    assert subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout == "exported\n"
    # Written after srun, the assignment is taken for the program: the mistake labkit avoids.
    wrong = subprocess.run(["bash", "-c", "srun LABKIT_PROBE=after printenv LABKIT_PROBE"],
                           capture_output=True, text=True, timeout=60)
    assert wrong.returncode != 0 and "after" not in wrong.stdout


# (ntasks, ntasks_per_node, nodes, cpus_per_task, gres) against the 1-node, 2-CPU, 8-RDU cluster
TABLE = [
    (1, None, None, None, None),
    (2, None, None, None, None),
    (3, None, None, None, None),
    (2, None, 1, None, None),
    (2, 2, 1, None, None),
    (2, 1, 1, None, None),
    (3, 2, 1, None, None),
    (4, 4, 1, None, None),
    (1, 4, 1, None, None),
    (1, None, None, 2, None),
    (1, None, None, 3, None),
    (2, None, None, 2, None),
    (1, None, 2, None, None),  # sbatch lowers --nodes to --ntasks
    (2, None, 2, None, None),
    (2, 2, 1, 1, "rdu:8"),
    (1, None, None, None, "rdu:9"),
    (32, 16, 1, 8, "rdu:8"),  # the course's rejected request
    (16, 16, 1, 8, "rdu:8"),  # the course's request: too big for this small node
]


@pytest.mark.parametrize("ntasks, per_node, nodes, cpus, gres", TABLE)
def test_labkit_agrees_with_slurm(tmp_path, limits, ntasks, per_node, nodes, cpus, gres):
    request = jobs.SlurmRequest(ntasks=ntasks, ntasks_per_node=per_node, nodes=nodes, cpus_per_task=cpus, gres=gres,
                                output="/dev/null")
    problems = request.problems(limits)
    script = tmp_path / "probe.sh"
    script.write_text("#!/bin/bash\ntrue\n")
    try:
        job = jobs.submit(request, str(script), cwd=str(tmp_path), check=False)
    except jobs.JobRejected as exc:
        assert problems, "Slurm refused a request labkit accepts: {}".format(exc.message)
    else:
        subprocess.run(["scancel", job.job_id], check=False)
        assert not problems, "Slurm accepted a request labkit refuses: {}".format(problems)
