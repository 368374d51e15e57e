"""The SambaNova testbed path end to end on a real Slurm, with SambaFlow's programs replaced by
scripts that write SambaFlow's real log lines (tests/fakes/sambaflow.py)."""

import re
from pathlib import Path

import pytest

from labkit import jobs
from labkit.params import ParameterError
from labkit.testbeds.sambanova import bert_large as sambanova
from tests.fakes.sambaflow import fixtures_dir, make_fake_sambaflow

pytestmark = pytest.mark.usefixtures("slurm_cluster")


@pytest.fixture
def setup(tmp_path):
    try:
        fixtures_dir()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    return make_fake_sambaflow(tmp_path / "opt" / "sambaflow")


def config(tmp_path, **changes):
    values = dict(ntasks=2, ntasks_per_node=2, nodes=1, cpus_per_task=1, rdus_per_node=1, num_tiles=4,
                  batch_size=16, steps=6, max_seq_length=128, target="testbed", work_dir=str(tmp_path / "BertLarge"))
    values.update(changes)
    return sambanova.SPEC.validate(values)


def test_compile_submit_follow_and_read_the_training_log(tmp_path, setup):
    cfg = config(tmp_path)
    assert sambanova.resolve_target(cfg, setup) == "testbed"
    run = sambanova.run_testbed(cfg, setup=setup, poll=0.3)

    assert run.source == "testbed" and run.status == "complete", run.notes
    # Read from the log the job wrote, found through slurm-<id>.out's "Using ... for output".
    slurm_out = Path(run.params["slurm_output"])
    assert slurm_out == tmp_path / "BertLarge" / "slurm-{}.out".format(run.params["job_id"])
    pointer = re.search(r"Using (\S+) for output", slurm_out.read_text()).group(1)
    assert run.params["training_log"] == pointer and Path(pointer).parent.parent == tmp_path / "BertLarge"
    # The reader took ntasks from the job's own SLURM_* environment, and the numbers agree
    # with SambaNova's definition (tokens per second).
    assert (run.params["ntasks"], run.params["ntasks_per_node"], run.params["nodes"]) == (2, 2, 1)
    m = run.metrics
    assert m["training_sequences_per_second"] == pytest.approx(2 * 16 * 6 * 128 / m["e2e_train_time"])
    assert m["sequences_per_second"] == pytest.approx(2 * 16 * 6 / m["e2e_train_time"], rel=1e-3)
    assert run.series["loss"]["x"] == [1, 2, 3, 4, 5, 6]
    assert m["compile_skipped"] is False and m["compile_s"] >= 0
    assert any("not training time" in n for n in run.notes)
    # The generated scripts carry the parameters.
    text = Path(pointer).read_text()
    assert "--steps_this_run 6" in text and "-b 16" in text and "srun --mpi=pmi2" in text
    assert "SLURM_NTASKS=2" in text

    # A second run with the same parameters reuses the PEF instead of compiling again.
    again = sambanova.run_testbed(cfg, setup=setup, poll=0.3, show=False)
    assert again.metrics["compile_skipped"] is True and again.status == "complete"
    assert again.params["job_id"] != run.params["job_id"]


def test_an_impossible_request_runs_nothing(tmp_path, setup):
    with pytest.raises(ParameterError, match=r"--ntasks 32 is more tasks than --nodes 1 x --ntasks-per-node 16"):
        config(tmp_path, ntasks=32, ntasks_per_node=16)
    assert not (tmp_path / "BertLarge").exists()


def test_slurm_refuses_what_this_small_cluster_cannot_hold(tmp_path, setup, slurm_cluster):
    # Valid for an SN30 node (labkit lets it through), too big for the 2-CPU test node: the
    # compile runs, then sbatch itself refuses, and the error carries Slurm's words.
    cfg = config(tmp_path, cpus_per_task=slurm_cluster.cpus + 1, ntasks=1, ntasks_per_node=1)
    with pytest.raises(jobs.JobRejected, match="sbatch: error: Batch job submission failed"):
        sambanova.run_testbed(cfg, setup=setup, show=False)


def test_target_testbed_without_sambaflow_says_how_to_run(tmp_path):
    from labkit.devices import DeviceError

    missing = sambanova.SambaFlow(root=str(tmp_path / "no-sambaflow"))
    with pytest.raises(DeviceError, match="target='portable'"):
        sambanova.resolve_target(config(tmp_path), missing)
    assert not (tmp_path / "BertLarge").exists()
