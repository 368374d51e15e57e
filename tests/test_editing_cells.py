"""Every exercise notebook clicked through as a student does in JupyterLab, in a real kernel:
edit the parameters cell and run only the run step's cell (refused, no traceback), press
Kernel -> Interrupt during training (a partial run, no traceback), and run the same cells again
(memory stays put, no process left behind). Golden sizes (tests/golden/golden.yml).

    .venv/bin/python -m pytest tests/test_editing_cells.py -x -q
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest
import yaml

from tests.student import Student

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = yaml.safe_load((ROOT / "tests" / "golden" / "golden.yml").read_text())
AGAIN = "run the config cell again (or Run All)"


@dataclass
class Exercise:
    notebook: str
    run: str  # text of the cell that does the work
    edit: Tuple[str, Any, str]  # (parameter, value typed, the config's value as the message shows it)
    shows: Tuple[str, ...] = ()  # cells after it that show or record the run
    parameters: Dict[str, Any] = field(default_factory=dict)
    rounds: int = 3  # runs of the cells in one kernel for the memory bound


EXERCISES = {
    "graphcore/mnist": Exercise("notebooks/graphcore/mnist.ipynb", "graphcore.run_exercise(config)",
                                ("learning_rate", 0.5, "0.03"), ("graphcore.show(run)", "results.record(run)")),
    "cerebras/bert_large": Exercise("notebooks/cerebras/bert_large.ipynb", "cerebras.run_exercise(config)",
                                    ("learning_rate", 0.001, "0.0001"), ("cerebras.show(run)",)),
    "cerebras/llama2_7b": Exercise("notebooks/cerebras/llama2_7b.ipynb", "llama2_7b.run_exercise(config)",
                                   ("batch_size", 16, "4"), ("llama2_7b.show(run)", "results.record(run)")),
    "sambanova/bert_large": Exercise("notebooks/sambanova/bert_large.ipynb", "sambanova.run_exercise(config)",
                                     ("learning_rate", 0.001, "0.000175"), ("sambanova.show(run)",)),
    "sambanova/inference": Exercise("notebooks/sambanova/inference.ipynb", "inference.run_exercise(config)",
                                    ("max_tokens", 12, "8"), ("inference.show(run)", "results.record(run)")),
    "groq/bert_tiny": Exercise("notebooks/groq/bert_tiny.ipynb", "groq.run_exercise(config)", ("num_samples", 20, "40"),
                               ("groq.show_latency(run)", "results.record(run)")),
    "comparison/ipu_vs_gpu": Exercise("notebooks/comparison/ipu_vs_gpu.ipynb", "comparison.run_exercise(config)",
                                      ("learning_rate", 0.5, "0.01"),
                                      ("scaling.load_reference(", "pd.concat([run.details, reference]",
                                       "scaling_report.plot_speedup(both)", "results.record(run)"),
                                      rounds=2),  # every configuration spawns fresh processes: slow
    "homework/ai_testbeds": Exercise("notebooks/homework/ai_testbeds.ipynb", "homework.run_exercise(config)",
                                     ("logs_dir", "other_logs", "'logs'"), parameters={"logs_dir": "logs"}),
    "homework/ai_testbeds_2025": Exercise("notebooks/homework/ai_testbeds_2025.ipynb", "fall2025.run_exercise(config)",
                                          ("runs_dir", "other_runs", "'evidence_2025/runs'"),
                                          ("fall2025.show(run)", "results.record(run)")),
}

#: The cells above that draw exactly one figure (a show step with a plot, or a plot).
ONE_FIGURE = ("graphcore.show(run)", "cerebras.show(run)", "llama2_7b.show(run)", "sambanova.show(run)",
              "inference.show(run)", "groq.show_latency(run)",
              "scaling_report.plot_speedup(both)")


def student(key: str, tmp_path: Path, **changes: Any) -> Student:
    exercise = EXERCISES[key]
    parameters = dict(GOLDEN[key]["parameters"]) if key in GOLDEN else dict(exercise.parameters)
    parameters.update(changes)
    return Student(exercise.notebook, parameters, cwd=str(tmp_path))


def only_line(outputs) -> str:
    """The one line a refused or stopped cell shows; fails on a traceback."""
    assert len(outputs.errors) == 1, outputs.shown
    lines = outputs.errors[0]["traceback"]
    assert len(lines) == 1 and "Traceback" not in lines[0] and "File " not in lines[0], lines
    return lines[0]


@pytest.mark.parametrize("key", list(EXERCISES))
def test_an_edited_parameter_is_refused_before_any_work(key, tmp_path):
    exercise = EXERCISES[key]
    name, typed, held = exercise.edit
    with student(key, tmp_path) as s:
        s.run_through(exercise.run)  # steps 1: the parameters and config cells (and those after them)
        assert not s.edit(**{name: typed}).errors  # step 2: the parameters cell edited, run alone
        refused = s.run_cell(exercise.run)  # step 3: the cell that does the work
        assert only_line(refused) == "{} is {!r} in the notebook but {} in config: {}".format(name, typed, held, AGAIN)
        assert refused.text.strip() == "", "work started before the refusal:\n" + refused.text


def test_mnist_a_deleted_or_invalid_parameter_is_refused_and_a_rebuilt_config_runs(tmp_path):
    with student("graphcore/mnist", tmp_path) as s:
        s.run_through("graphcore.run_exercise(config)")
        s.delete("seed")
        assert only_line(s.run_cell("graphcore.run_exercise(config)")) == (
            "seed was deleted from the notebook but is 0 in config: " + AGAIN)
        s.edit(seed=0, epochs=0)
        assert only_line(s.run_cell("graphcore.run_exercise(config)")) == (
            "epochs is 0 in the notebook, which is not allowed (too small; allowed: an int >= 1 and <= 1000), "
            "but 2 in config: " + AGAIN)
        s.edit(epochs=1, learning_rate=0.05)
        assert not s.run_cell("SPEC.from_notebook").errors  # the config cell again
        ran = s.run_cell("graphcore.run_exercise(config)")
        assert not ran.errors, ran.shown
        assert s.value("run.params['learning_rate'], run.params['epochs']") == (0.05, 1)


@pytest.mark.parametrize("late", [0.0, 0.5])
def test_cells_run_all_queued_behind_a_bad_parameter_are_aborted_even_when_they_arrive_late(late, tmp_path):
    """Run All sends every cell at once; on a loaded machine the later requests can reach the kernel
    after the check cell has shown its stop. They are aborted as the others are, not run into a
    NameError; a cell run once the stop's reply is back runs."""
    with student("graphcore/mnist", tmp_path, epochs=0) as s:
        check = s.cells.index(s.cell("SPEC.from_notebook"))
        s.run_through("SPEC.from_notebook")
        stopped = s.kc.execute(s.cells[check])
        while True:
            msg = s.kc.get_iopub_msg(timeout=120)
            if msg["parent_header"].get("msg_id") == stopped and msg["msg_type"] == "error":
                break
        time.sleep(late)
        behind = [s.kc.execute(source) for source in s.cells[check + 1:check + 3]]
        replies = {}  # earlier cells' replies are still on the shell channel
        while not set([stopped] + behind) <= set(replies):
            reply = s.kc.get_shell_msg(timeout=120)
            replies[reply["parent_header"]["msg_id"]] = reply["content"]["status"]
        assert [replies[i] for i in [stopped] + behind] == ["error", "aborted", "aborted"]
        s.edit(epochs=1)
        assert not s.run_cell("SPEC.from_notebook").errors


@pytest.mark.timing
def test_mnist_interrupt_returns_a_partial_run_shown_and_recorded_as_such(tmp_path):
    with student("graphcore/mnist", tmp_path, epochs=10) as s:
        s.run_through("graphcore.run_exercise(config)")
        ran = s.execute(s.cell("graphcore.run_exercise(config)"), interrupt_when="(includes warm-up)")
        assert not ran.errors, ran.shown
        stopped = re.findall(r"^interrupted at epoch (\d+)/10, step (\d+)/6$", ran.text, re.M)
        assert len(stopped) == 1, ran.text
        epoch, step = map(int, stopped[0])
        assert "Accuracy on test set" not in ran.text  # no test pass after a stop
        assert s.value("run.status") == "interrupted"
        steps = s.value("len(run.series['loss']['y'])")
        assert steps == (epoch - 1) * 6 + step and 6 <= steps < 60
        shown = s.run_cell("graphcore.show(run)")  # the metrics table, then the curves
        assert "<th>status</th>\n      <td>interrupted: partial run</td>" in shown.shown
        assert "<th>stopped at</th>\n      <td>epoch {}/10, step {}/6</td>".format(epoch, step) in shown.shown
        assert "test_accuracy" not in shown.shown and "final_loss" in shown.shown
        assert not shown.errors and shown.count("image/png") == 1
        recorded = s.run_cell("results.record(run)")
        assert recorded.messages[0]["content"]["data"]["application/scrapbook.scrap.json+json"]["data"]["status"] == "interrupted"
        assert s.leftover_children() == []


@pytest.mark.timing
def test_cerebras_interrupt_returns_a_partial_run(tmp_path):
    with student("cerebras/bert_large", tmp_path, max_steps=400, log_steps=5, compare_batch_sizes=[]) as s:
        s.run_through("cerebras.run_exercise(config)")
        ran = s.execute(s.cell("cerebras.run_exercise(config)"), interrupt_when="Step=5,")
        assert not ran.errors, ran.shown
        stopped = re.findall(r"^interrupted at step (\d+)/400$", ran.text, re.M)
        assert len(stopped) == 1, ran.text
        shown = s.run_cell("cerebras.show(run)")
        assert "<td>interrupted: partial run</td>" in shown.shown  # the metrics table
        assert "<th>stopped at</th>\n      <td>step {}/400</td>".format(stopped[0]) in shown.shown
        assert s.value("run.status, run.metrics['steps']") == ("interrupted", int(stopped[0]))
        assert "Training completed successfully" not in ran.text


@pytest.mark.timing
def test_llama_interrupt_returns_a_partial_run_shown_and_recorded_as_such(tmp_path):
    with student("cerebras/llama2_7b", tmp_path, steps=400, log_steps=5) as s:
        s.run_through("llama2_7b.run_exercise(config)")
        ran = s.execute(s.cell("llama2_7b.run_exercise(config)"), interrupt_when="Step=5,")
        assert not ran.errors, ran.shown
        stopped = re.findall(r"^interrupted at step (\d+)/400$", ran.text, re.M)
        assert len(stopped) == 1, ran.text
        assert "Training completed successfully" not in ran.text
        assert re.search(r"Processed \d+ training sample\(s\)", ran.text)  # what it trained, said as the CS-3 does
        assert s.value("run.status, len(run.series['loss']['y'])") == ("interrupted", int(stopped[0]))
        shown = s.run_cell("llama2_7b.show(run)")
        assert "<td>interrupted: partial run</td>" in shown.shown and "stopped at" in shown.shown
        assert not shown.errors and shown.count("image/png") == 1
        recorded = s.run_cell("results.record(run)")
        assert recorded.messages[0]["content"]["data"]["application/scrapbook.scrap.json+json"]["data"]["status"] == "interrupted"
        assert s.leftover_children() == []


@pytest.mark.timing
def test_interrupting_the_data_parallel_sambanova_run_stops_its_ranks(tmp_path):
    with student("sambanova/bert_large", tmp_path, steps=400, sweep_ntasks=[]) as s:
        s.run_through("sambanova.run_exercise(config)")
        ran = s.execute(s.cell("sambanova.run_exercise(config)"), interrupt_when="loss=")  # rank 0's first step
        assert not ran.errors, ran.shown
        assert re.search(r"^interrupted at step \d+/400$", ran.text, re.M), ran.text
        assert s.value("run.status") == "interrupted"
        assert s.leftover_children() == []


@pytest.mark.timing
def test_interrupting_the_inference_run_closes_its_requests_and_stops_its_servers(tmp_path):
    with student("sambanova/inference", tmp_path, num_prompts=4, max_tokens=48, repeats=10) as s:
        s.run_through("inference.run_exercise(config)")
        # once the bar shows the first batch done (2 warm-up requests, then 4 measured): a measured batch to keep
        done = re.compile(r"^requests:\s+\d+%\|[^|]*\|\s+([6-9]|\d\d+)/", re.M)
        ran = s.execute(s.cell("inference.run_exercise(config)"), interrupt_when=done)
        assert not ran.errors, ran.shown
        stopped = re.findall(r"^interrupted at batch (\d+)/40$", ran.text, re.M)
        assert len(stopped) == 1, ran.text
        assert s.value("run.status") == "interrupted"
        assert s.value("run.metrics['requests'] == len(run.details['requests'])")  # what was sent is kept
        assert s.leftover_children() == []  # both local servers stopped
        shown = s.run_cell("inference.show(run)")
        assert not shown.errors and "interrupted: partial run" in shown.text
        recorded = s.run_cell("results.record(run)")
        assert recorded.messages[0]["content"]["data"]["application/scrapbook.scrap.json+json"]["data"]["status"] == "interrupted"


@pytest.mark.parametrize("key", [k for k in EXERCISES if k in GOLDEN])
def test_running_the_cells_again_keeps_memory_and_leaves_no_process(key, tmp_path):
    exercise = EXERCISES[key]
    with student(key, tmp_path) as s:
        s.run_through(exercise.run)
        sizes = []
        for _ in range(exercise.rounds):
            for cell in (exercise.run,) + exercise.shows:
                out = s.run_cell(cell)
                assert not out.errors, out.shown
                if cell in ONE_FIGURE:
                    assert out.count("image/png") == 1, "{}: not one figure".format(cell)
                if "record" in cell:
                    assert out.count("application/scrapbook.scrap.json+json") == 1
            assert s.leftover_children() == []
            sizes.append(s.rss_mb())
        # A repeat may settle allocator caches, never grow by a run's worth.
        assert sizes[-1] - sizes[0] < BOUND_MB, sizes


#: How much a kernel may grow over repeats of a run. Measured at golden sizes, RSS after runs 1-4 (MB):
#: mnist 814, 842, 845, 833; cerebras 1031-1037; sambanova 745-749; groq 1106-1111.
BOUND_MB = 64


@pytest.mark.timing
def test_interrupting_the_scaling_study_keeps_the_configurations_measured_and_no_replica(tmp_path):
    with student("comparison/ipu_vs_gpu", tmp_path) as s:
        s.run_through("comparison.run_exercise(config)")
        ran = s.execute(s.cell("comparison.run_exercise(config)"), interrupt_when="configurations")  # the bar appears
        assert not ran.errors, ran.shown
        stopped = re.findall(r"^interrupted at configuration (\d)/4$", ran.text, re.M)
        assert len(stopped) == 1, ran.text
        assert s.value("len(run.details)") == int(stopped[0])
        assert s.leftover_children() == []
        recorded = s.run_cell("results.record(run)")
        assert recorded.messages[0]["content"]["data"]["application/scrapbook.scrap.json+json"]["data"]["status"] == "interrupted"


@pytest.mark.timing
def test_interrupting_a_groq_evaluation_shows_one_line(tmp_path):
    with student("groq/bert_tiny", tmp_path, num_samples=None) as s:  # the whole set: long enough to stop
        s.run_through("groq.run_exercise(config)")
        # On an idle machine the 80 sentences take well under a second: slow each batch down (the
        # real engines still run) so that the interrupt lands while the evaluation is in progress.
        s.execute("import time\nfrom labkit.testbeds.groq.backends import TorchEngine as _T\n_call = _T.__call__\n"
                  "def _slow(self, inputs):\n    time.sleep(0.05)\n    return _call(self, inputs)\n"
                  "_T.__call__ = _slow")
        ran = s.execute(s.cell("groq.run_exercise(config)"), interrupt_when="inference")
        # the cpu pass cut short: no backend measured yet
        assert only_line(ran) == "interrupted in cpu inference: nothing was measured yet, so no run was recorded"
        assert s.leftover_children() == []
