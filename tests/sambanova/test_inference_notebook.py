"""The inference notebook executed for real (papermill, a real kernel): one endpoint is a stand-in
the test starts with an API key given to the notebook as OPENAI_API_KEY (a server of one's own that asks
for a key: the key is looked up, never shown; the ALCF token goes to ALCF only), the other a local server the notebook starts. The executed notebook and
its record hold no token, and no server process is left after the kernel ends."""

import json
import uuid
from pathlib import Path

import nbformat
import papermill
import psutil
import pytest

pytest.importorskip("openai")
serving = pytest.importorskip("labkit.serving")

from labkit import results  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
TOKEN = "alcf-" + uuid.uuid4().hex


def _marked(mark):
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("LABKIT_TEST_MARK") == mark:
                found.append(process.pid)
        except (psutil.Error, OSError):
            continue
    return found


def test_the_notebook_measures_records_no_token_and_leaves_nothing_running(tmp_path, monkeypatch):
    mark = uuid.uuid4().hex
    monkeypatch.setenv("LABKIT_TEST_MARK", mark)
    monkeypatch.setenv("OPENAI_API_KEY", TOKEN)
    monkeypatch.setenv("LABKIT_PROGRESS", "text")
    with serving.start_server(config="batched", model_size="tiny", api_key=TOKEN) as server:
        assert _marked(mark) == [server.pid]  # the check below sees a server that runs
        out = tmp_path / "inference.ipynb"
        papermill.execute_notebook(
            str(ROOT / "notebooks" / "sambanova" / "inference.ipynb"), str(out), cwd=str(tmp_path),
            kernel_name="python3", progress_bar=False,
            parameters={"endpoint_names": ["keyed", "local"], "base_urls": [server.base_url, "local:sequential"],
                        "models": [server.model, "auto"], "num_prompts": 2, "max_tokens": 6, "concurrency": [1, 2],
                        "repeats": 2, "warmup_requests": 1})
    assert TOKEN not in out.read_text()  # not in any output, parameter or record
    run = results.read(str(out)).runs[0]
    assert run.status == "complete" and run.source == "testbed"
    assert run.metrics["requests"] == 2 * 2 * 2 * 2 and run.metrics["requests_failed"] == 0
    assert run.metrics["warmup_requests"] == 2 and run.metrics["token_count_source"] == "server usage"
    assert [e["token_from"] for e in run.environment["endpoints"]] == [
        "the environment variable OPENAI_API_KEY", "the local server"]
    assert TOKEN not in json.dumps(run.to_dict())
    text = "\n".join(results.output_lines(str(out), "- "))
    assert "a stand-in on this machine, not Metis" in text and "warm-up" in text
    assert _marked(mark) == []  # the notebook's local server stopped with its run; the test's with its block


def _show_outputs(path):
    """The outputs of the cell that calls ``inference.show(run)``."""
    cells = nbformat.read(str(path), as_version=4).cells
    return [c for c in cells if c.cell_type == "code" and c.source.strip() == "inference.show(run)"][0].outputs


def test_a_knee_search_over_request_rates_on_a_reasoning_stand_in_draws_one_figure(tmp_path, monkeypatch):
    """request_rate (Poisson arrivals) with a knee search, both of the stand-in's
    configurations on one figure, and its reasoning deltas shown as reasoning and answer tokens."""
    monkeypatch.setenv("LABKIT_PROGRESS", "text")
    out = tmp_path / "inference.ipynb"
    papermill.execute_notebook(
        str(ROOT / "notebooks" / "sambanova" / "inference.ipynb"), str(out), cwd=str(tmp_path),
        kernel_name="python3", progress_bar=False,
        parameters={"num_prompts": 3, "output_tokens": 6, "local_reasoning_tokens": 2, "request_rate": [4.0],
                    "knee": True, "knee_max_requests": 9, "knee_max_s": 30.0, "repeats": 1, "warmup_requests": 0,
                    "ttft_target_s": 5.0, "tpot_target_s": None})
    run = results.read(str(out)).runs[0]
    assert run.status == "complete" and run.metrics["requests_failed"] == 0
    assert run.metrics["output_tokens_per_request"] == 6  # output_tokens with ignore_eos: every answer that long
    notes = "\n".join(run.notes)
    assert "Requests arrived at a set rate (Poisson arrivals" in notes
    for name in ("batched", "sequential"):  # a knee (or why none) per configuration, within the request budget
        assert "{}: the knee is at".format(name) in notes or "{}: no knee found".format(name) in notes
    shown = _show_outputs(out)
    figures = [o for o in shown if "image/png" in o.get("data", {})]
    assert len(figures) == 1  # latency and goodput against load, both endpoints, on one figure
    tables = "\n".join(o.get("data", {}).get("text/html", "") for o in shown)
    # 2 reasoning tokens, then 4 of answer, per request, from the stand-in's reasoning deltas and usage details
    assert "reasoning + answer tokens/request" in tables and "2.0 + 4.0" in tables
