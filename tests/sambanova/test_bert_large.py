"""The SambaNova exercise off the testbed: parameters, the portable data-parallel run, reading
real testbed logs, the homework table and plot. (The testbed job path: tests/slurm.)"""

import math
from pathlib import Path

import pytest

from labkit import bert, jobs
from labkit.devices import DeviceError
from labkit.params import ParameterError
from labkit.testbeds.sambanova import bert_large
from tests.sambanova.fixture_logs import FIXTURES, needs_logs

SMALL = dict(ntasks=2, ntasks_per_node=2, model_size="micro", batch_size=4, steps=4, max_seq_length=32,
             target="portable", device="cpu")


def test_defaults_are_the_course_values():
    config = bert_large.SPEC.validate({})
    expected = dict(ntasks=16, ntasks_per_node=16, nodes=1, cpus_per_task=8, rdus_per_node=8, num_tiles=4,
                    batch_size=256, steps=505, max_seq_length=128, model_size="large", seed=0, log_path=None)
    assert {k: config[k] for k in expected} == expected


def test_model_sizes_are_labkit_berts_presets():
    assert bert_large.MODEL_SIZES == tuple(bert.MODEL_SIZES)


@pytest.mark.parametrize("values, words", [
    ({"ntasks": 0}, "ntasks = 0: too small"),
    ({"batch_size": 0}, "batch_size = 0: too small"),
    ({"steps": 10 ** 7}, "steps = 10000000: too large"),
    ({"log_path": "/no/such/BertLarge.out"}, "log_path = '/no/such/BertLarge.out': no such file"),
    ({"ntasks": 32}, "--ntasks 32 is more tasks than --nodes 1 x --ntasks-per-node 16 = 16 can hold"),
    ({"cpus_per_task": 16}, "16 tasks on one node x --cpus-per-task 16 = 256 CPUs per node, more than a node"),
    ({"rdus_per_node": 9}, "--gres=rdu:9 asks for more RDUs per node than a node of SambaNova SN30"),
    ({"rdus_per_node": 4}, "16 tasks on one node x 4 RDU tiles each = 64 tiles, more than the 4 RDU(s)"),
    ({"num_tiles": 3}, "num_tiles = 3: not one of the choices"),
    ({"model_size": "huge"}, "model_size = 'huge': not one of the choices"),
    ({"compare_logs": ["/no/such.log"]}, "compare_logs = ['/no/such.log']: '/no/such.log': no such file"),
    ({"sweep_ntasks": [0, 4]}, "sweep_ntasks = [0, 4]: [0] outside 1..16"),
])
def test_bad_parameters_are_explained(values, words):
    with pytest.raises(ParameterError) as caught:
        bert_large.SPEC.validate(values)
    assert words in str(caught.value)


def test_the_32_task_homework_variant_is_valid_on_two_nodes():
    config = bert_large.SPEC.validate({"ntasks": 32, "nodes": 2})
    assert bert_large.slurm_request(config).problems(jobs.SN30) == []


def test_portable_data_parallel_run_reports_sambanova_metrics():
    config = bert_large.SPEC.validate(SMALL)
    run = bert_large.run_exercise(config)
    assert (run.source, run.status, run.params["ntasks"]) == ("portable", "complete", 2)
    m = run.metrics
    assert m["training_sequences_per_second"] == pytest.approx(2 * 4 * 4 * 32 / m["e2e_train_time"])
    assert m["sequences_per_second"] == pytest.approx(2 * 4 * 4 / m["e2e_train_time"])
    assert m["training_sequences_per_second"] == pytest.approx(32 * m["sequences_per_second"])  # tokens
    assert m["replicas_in_sync"] is True  # the all-reduce kept both ranks' weights identical
    assert run.series["loss"]["x"] == [1, 2, 3, 4] and all(math.isfinite(x) for x in run.series["loss"]["y"])
    assert m["final_loss"] == run.series["loss"]["y"][-1]
    assert run.environment["backend"] == "gloo" and run.environment["ranks"] == 2
    assert any("counts tokens per second" in n for n in run.notes)


def test_rank_zero_trains_like_a_single_process_on_the_first_step():
    # Same seed, same first batch on rank 0: the first loss does not depend on ntasks
    # (the gradients only meet after the forward pass).
    one = bert_large.run_portable(bert_large.SPEC.validate(dict(SMALL, steps=1)), ntasks=1, show=False)
    two = bert_large.run_portable(bert_large.SPEC.validate(dict(SMALL, steps=1)), ntasks=2, show=False)
    assert one.series["loss"]["y"][0] == pytest.approx(two.series["loss"]["y"][0], rel=1e-6)


def test_a_run_that_cannot_fit_in_memory_is_refused_before_anything_starts():
    config = bert_large.SPEC.validate({"target": "portable", "device": "cpu"})  # BERT-Large, 16 x 256
    with pytest.raises(MemoryError, match="model_size='large' with ntasks=16.*nothing was run.*'tiny' or 'micro'") as caught:
        bert_large.run_exercise(config)
    # A ParameterError too: Jupyter shows the one message a student needs, not a traceback.
    assert isinstance(caught.value, ParameterError)
    shown = caught.value._render_traceback_()
    assert len(shown) == 1 and "Traceback" not in shown[0] and "model_size='micro'" in shown[0]


def test_asking_for_gpus_that_are_not_there_is_an_error():
    import torch

    if torch.cuda.device_count() >= 2:
        pytest.skip("this machine has the GPUs")
    with pytest.raises(DeviceError, match="NCCL needs one GPU per rank"):
        bert_large.run_exercise(bert_large.SPEC.validate(dict(SMALL, device="cuda")))


def test_target_log_needs_a_log_path():
    with pytest.raises(ParameterError, match="target = 'log': give log_path"):
        bert_large.run_exercise(bert_large.SPEC.validate({"target": "log"}))


@needs_logs
def test_reading_a_real_training_log():
    log = FIXTURES / "tstabrawa-fall2024-HW7-BertLarge-16tasks-2ndlog.log"
    config = bert_large.SPEC.validate({"log_path": str(log)})
    assert bert_large.resolve_target(config) == "log"
    run = bert_large.run_exercise(config)
    assert run.source == "log" and run.params["ntasks"] == 16 and run.params["steps"] == 505
    assert run.metrics["e2e_train_time"] == pytest.approx(470.3965759277344)
    # SambaNova's figure is tokens/s: ntasks x batch x steps x length / time
    assert run.metrics["training_sequences_per_second"] == pytest.approx(16 * 256 * 505 * 128 / 470.3965759277344)


@needs_logs
def test_a_slurm_pointer_file_alone_says_where_the_log_is():
    import labkit.logs

    with pytest.raises(labkit.logs.NoRunError, match="/home/stabrawa/BertLarge/112124.21/BertLarge.out"):
        bert_large.read_log(FIXTURES / "tstabrawa-fall2024-slurm-43715.log")


@needs_logs
def test_homework_table_and_plot_from_real_logs_and_a_portable_run():
    import matplotlib

    matplotlib.use("Agg")
    names = ["student-xiaoruiDong-spring2024-bertlarge-ntasks4-run.log", "tstabrawa-fall2024-HW7-BertLarge-8tasks-2ndlog.log",
             "tstabrawa-fall2024-HW7-BertLarge-16tasks-2ndlog.log", "student-anil-bilgin-spring2024-bertlarge-ntasks32-run.log"]
    runs = [bert_large.read_log(FIXTURES / n) for n in names]
    runs.append(bert_large.run_portable(bert_large.SPEC.validate(dict(SMALL, steps=2)), ntasks=1, show=False))
    table = bert_large.throughput_table(runs)
    logs = table[table.source == "log"]
    assert list(logs.ntasks) == [4, 8, 16, 32]
    tokens = list(logs["training_sequences_per_second (tokens/s)"])
    assert tokens == sorted(tokens)  # more tasks, more throughput on the testbed
    assert list(logs["sequences/s"] * 128) == pytest.approx(tokens, rel=1e-3)
    assert list(table[table.source == "portable"].ntasks) == [1]
    ax = bert_large.plot_throughput(table)
    labels = [line.get_label() for line in ax.get_lines()]
    assert "log (large)" in labels and "portable (micro)" in labels
    x, y = ax.get_lines()[labels.index("log (large)")].get_data()
    assert list(x) == [4, 8, 16, 32] and list(y) == pytest.approx(tokens)
    matplotlib.pyplot.close("all")


@needs_logs
def test_log_path_goes_through_plan_run_exercise_and_show():
    log = FIXTURES / "tstabrawa-fall2024-HW7-BertLarge-16tasks-2ndlog.log"
    config = bert_large.SPEC.validate({"log_path": str(log)})
    plan = bert_large.plan(config)
    assert plan.path == "log" and plan.where == "reads the log at {}".format(log)
    assert "target='auto' and log_path is set" in plan.why and "sbatch --ntasks 16" in str(plan)
    run = bert_large.run_exercise(config, plan)
    assert run.source == "log" and run.metrics["e2e_train_time"] == pytest.approx(470.3965759277344)
    table, figure = bert_large.show(run)  # outside a kernel: what it would show, like a local run
    assert "e2e_train_time" in table.index and figure.axes[0].get_title() == "log run, ntasks=16"


def test_the_plan_of_a_portable_run_says_why():
    plan = bert_large.plan(bert_large.SPEC.validate(dict(SMALL, target="auto")))
    assert plan.path == "portable" and plan.where.startswith("2 portable data-parallel rank(s) here")
    assert "this is not a SambaNova node" in plan.why


def test_the_plan_and_the_refusal_say_the_sn30_is_gone_from_alcf():
    # argonne-lcf/user-guides: the SN30 pages were removed on 2026-04-09; Metis (SN40L) serves inference only
    plan = bert_large.plan(bert_large.SPEC.validate(dict(SMALL, target="auto")))
    assert plan.more[0] == bert_large.exercise.AT_ALCF
    assert "ALCF no longer has the SN30" in str(plan) and "inference only" in str(plan)
    with pytest.raises(DeviceError) as refused:
        bert_large.resolve_target(bert_large.SPEC.validate(dict(SMALL, target="testbed")))
    said = str(refused.value)
    assert "ALCF no longer has the SN30" in said and "target='portable'" in said


def test_the_notebook_points_only_to_what_exists():
    import nbformat

    notebook = nbformat.read(str(Path(__file__).resolve().parents[2] / "notebooks" / "sambanova" / "bert_large.ipynb"),
                             as_version=4)
    text = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    assert "The SN30 is no longer at ALCF" in text and "notebooks/sambanova/inference.ipynb" in text
    for gone in ("sambanova.alcf.anl.gov", "sn30-r1-h1", "ALCF's **SambaNova DataScale SN30**"):
        assert gone not in text
