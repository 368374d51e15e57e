"""labkit.jobs without a scheduler: request checks, flag and script builders."""

import shlex
import subprocess

import pytest

from labkit import jobs

COURSE = jobs.SlurmRequest(ntasks=16, ntasks_per_node=16, nodes=1, cpus_per_task=8, gres="rdu:8", tiles_per_task=4)


def test_the_course_request_fits_an_sn30_node():
    assert COURSE.problems(jobs.SN30) == []
    assert COURSE.validate(jobs.SN30) is COURSE


def test_the_course_32_task_request_is_rejected_with_the_reason():
    bad = COURSE.replace(ntasks=32)
    with pytest.raises(jobs.JobRequestError) as caught:
        bad.validate(jobs.SN30)
    message = str(caught.value)
    assert "--ntasks 32 is more tasks than --nodes 1 x --ntasks-per-node 16 = 16" in message
    assert "--nodes 2" in message  # says what would work
    assert len(caught.value.problems) == 1
    # and the suggested fix is itself valid
    assert bad.replace(nodes=2).problems(jobs.SN30) == []


@pytest.mark.parametrize("changes, words", [
    (dict(cpus_per_task=9), "16 tasks on one node x --cpus-per-task 9 = 144 CPUs per node, more than a node"),
    (dict(cpus_per_task=200), "--cpus-per-task 200 is more CPUs than one node"),
    (dict(gres="rdu:16"), "--gres=rdu:16 asks for more RDUs per node than a node of SambaNova SN30 (ALCF) has (8)"),
    (dict(tiles_per_task=8), "16 tasks on one node x 8 RDU tiles each = 128 tiles, more than"),
    (dict(gres="rdu:4"), "= 64 tiles, more than the 4 RDU(s) held on a node provide (4 x 8 tiles = 32)"),
    (dict(nodes=9, ntasks=16 * 9), "--nodes 9 asks for more nodes than SambaNova SN30 (ALCF) has (8)"),
    (dict(ntasks=0), "ntasks = 0: must be a whole number >= 1"),
    (dict(cpus_per_task=True), "cpus_per_task = True: must be a whole number >= 1"),
])
def test_each_impossible_request_is_explained(changes, words):
    problems = COURSE.replace(**changes).problems(jobs.SN30)
    assert any(words in p for p in problems), problems


def test_tasks_without_nodes_are_checked_against_the_whole_cluster():
    small = jobs.ClusterLimits("two-cpu box", nodes=1, cpus_per_node=2)
    assert jobs.SlurmRequest(ntasks=2).problems(small) == []
    assert "3 CPUs, more than all 1 node(s) of two-cpu box hold (2)" in jobs.SlurmRequest(ntasks=3).problems(small)[0]


def test_unknown_limits_are_not_checked():
    assert jobs.SlurmRequest(ntasks=10 ** 6, cpus_per_task=64).problems(jobs.ClusterLimits("anywhere")) == []


def test_sbatch_argv_carries_every_flag_in_slurm_spelling():
    argv = jobs.sbatch_argv(COURSE.replace(output="slurm-%A.out"), "BertLarge_run.sh", ["0101"])
    assert argv[0] == "sbatch" and argv[-2:] == ["BertLarge_run.sh", "0101"]
    assert set(argv[1:-2]) == {"--ntasks=16", "--ntasks-per-node=16", "--nodes=1", "--cpus-per-task=8",
                               "--gres=rdu:8", "--output=slurm-%A.out"}
    assert not any("tiles" in a for a in argv)  # a labkit check, not a Slurm flag


def test_batch_script_puts_the_request_in_sbatch_lines_and_runs_in_bash(tmp_path):
    text = jobs.batch_script(jobs.SlurmRequest(ntasks=2, job_name="demo"), ['echo "$GREETING world"'],
                             env={"GREETING": "hello there"})
    assert text.startswith("#!/bin/bash\n#SBATCH --ntasks=2\n#SBATCH --job-name=demo\n")
    script = tmp_path / "job.sh"
    script.write_text(text)
    # Outside Slurm a batch script is an ordinary shell script (#SBATCH lines are comments).
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True).stdout
    assert out == "hello there world\n"


def test_srun_command_puts_the_environment_before_srun():
    line = jobs.srun_command(["python", "mnist_poptorch.py"], ipus=1, env={"POPTORCH_CACHE_DIR": "/tmp/cache dir"})
    words = shlex.split(line)
    assert words[0] == "POPTORCH_CACHE_DIR=/tmp/cache dir"
    assert words[1:] == ["srun", "--ipus=1", "python", "mnist_poptorch.py"]


def test_srun_argv_exports_through_srun_flags_before_the_program():
    argv = jobs.srun_argv(["python", "m.py"], ipus=4, env={"A": "1"}, request=jobs.SlurmRequest(ntasks=1))
    assert argv == ["srun", "--ntasks=1", "--export=ALL,A=1", "--ipus=4", "python", "m.py"]


@pytest.mark.parametrize("ipus", [0, -1, True, 1.5])
def test_srun_rejects_a_bad_ipu_count(ipus):
    with pytest.raises(ValueError, match="ipus"):
        jobs.srun_argv(["true"], ipus=ipus)


def test_bad_environment_names_are_refused():
    with pytest.raises(ValueError, match="environment variable name"):
        jobs.srun_command(["true"], env={"1BAD": "x"})


def test_pbs_script_selects_the_same_resources():
    text = jobs.pbs_script(COURSE.replace(ntasks=32, nodes=2, time="01:00:00"), ["echo hi"], queue="debug")
    assert "#PBS -l select=2:ncpus=128:mpiprocs=16:rdu=8\n" in text
    assert "#PBS -l walltime=01:00:00\n" in text and "#PBS -q debug\n" in text


@pytest.mark.parametrize("text, counts", [
    ("rdu:8", {"rdu": 8}), ("gpu:a100:4,rdu:2", {"gpu": 4, "rdu": 2}), ("rdu:8(S:0-1)", {"rdu": 8}),
    ("(null)", {}), (None, {}), ("gpu", {"gpu": 1}),
])
def test_parse_gres(text, counts):
    assert jobs.parse_gres(text) == counts


