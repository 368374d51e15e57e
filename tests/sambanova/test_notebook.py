"""notebooks/sambanova/bert_large.ipynb under papermill: bad parameters stop it before anything
runs; a testbed log and the students' logs give the homework table."""

from pathlib import Path

import papermill
import pytest

from labkit import results
from tests.sambanova.fixture_logs import FIXTURES, needs_logs

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "sambanova" / "bert_large.ipynb"


def execute(tmp_path, **parameters):
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(str(NOTEBOOK), str(out), parameters=parameters, cwd=str(tmp_path),
                               progress_bar=False, kernel_name="python3")
    return out


def test_the_course_32_task_request_stops_the_notebook_with_the_reason(tmp_path):
    with pytest.raises(papermill.PapermillExecutionError) as caught:
        execute(tmp_path, ntasks=32, work_dir=str(tmp_path / "BertLarge"))
    assert caught.value.ename == "ParameterError"
    assert "--ntasks 32 is more tasks than --nodes 1 x --ntasks-per-node 16 = 16 can hold" in caught.value.evalue
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.ipynb"]  # nothing ran, nothing written


@needs_logs
def test_a_testbed_log_and_the_homework_logs(tmp_path):
    logs = [str(FIXTURES / n) for n in ("student-xiaoruiDong-spring2024-bertlarge-ntasks4-run.log",
                                        "tstabrawa-fall2024-HW7-BertLarge-8tasks-2ndlog.log")]
    out = execute(tmp_path, log_path=str(FIXTURES / "tstabrawa-fall2024-HW7-BertLarge-16tasks-2ndlog.log"),
                  compare_logs=logs)
    found = results.read(out)
    assert found.error is None
    (run,) = found.runs
    assert run.source == "log" and run.params["ntasks"] == 16
    assert run.metrics["e2e_train_time"] == pytest.approx(470.3965759277344)
    table = results.collect(out)
    assert list(table.ntasks) == [16]
    text = out.read_text()
    assert "counts tokens per second" in text and "562856 tokens/s" in text and "275945 tokens/s" in text
