"""Pasted evidence (tests/sambanova/evidence/, shapes from the OpenAI API reference and the course's
Metis page; see its README) read like a log into sambanova/inference records."""

from pathlib import Path

import pytest

import labkit.logs
from labkit.testbeds.metric_tables import table_for
from labkit.testbeds.sambanova import inference

HERE = Path(__file__).resolve().parent / "evidence"


def read(name):
    report = labkit.logs.read(str(HERE / name))
    assert report.format == "openai", (name, report.notes)
    assert len(report.runs) == 1
    run = report.run
    assert run.exercise == "sambanova/inference" and run.source == "log"
    assert table_for(run.exercise).check(run) == []
    return run


def test_a_metis_completion_keeps_the_servers_timings_apart_from_any_client_time():
    run = read("metis_completion.json")
    assert run.params["model"] == "gpt-oss-120b-131072" and run.params["response_kind"] == "completion"
    assert run.metrics["requests"] == 1 and run.metrics["output_tokens"] == 128
    assert run.metrics["server_ttft_median"] == pytest.approx(0.19632983207702637)
    assert run.metrics["server_total_latency_median"] == pytest.approx(0.5117166042327881)
    assert run.metrics["server_decode_rate_median"] == pytest.approx(402.7315520419753)
    assert "e2el_median" not in run.metrics and "ttft_median" not in run.metrics  # no client clock in a JSON
    assert any("server's own clock" in n for n in run.notes) and any("not a benchmark" in n for n in run.notes)


def test_a_sophia_completion_has_counts_and_says_it_has_no_server_timings():
    run = read("sophia_completion.json")
    assert run.params["model"] == "openai/gpt-oss-120b" and run.metrics["output_tokens"] == 95
    assert not [m for m in run.metrics if m.startswith("server_")]
    assert any("No server timings" in n for n in run.notes)


def test_a_curl_and_time_transcript_is_one_client_side_e2el_beside_the_servers_total():
    run = read("metis_curl_time.txt")
    assert run.params["response_kind"] == "curl" and run.params["url"].endswith("/chat/completions")
    assert run.metrics["e2el_median"] == pytest.approx(4.990)
    assert run.metrics["server_total_latency_median"] == pytest.approx(0.5296)
    note = next(n for n in run.notes if "`time`" in n)
    assert "gateway" in note and "cannot be told apart" in note


def test_a_streamed_transcript_counts_its_chunks_and_takes_usage_from_the_last():
    run = read("metis_stream.txt")
    assert run.params["response_kind"] == "sse" and run.metrics["output_tokens"] == 14
    assert run.metrics["token_count_source"] == "server usage"
    assert run.metrics["server_ttft_median"] == pytest.approx(0.1931)
    assert any("14 chunk(s) with text" in n for n in run.notes)  # not the role chunk, nor the finish chunk


def test_a_students_results_are_recomputed_per_output_token_and_the_throughput_misreading_named():
    run = read("student_results.json")
    assert run.metrics["requests"] == 4 and run.metrics["output_tokens"] == 128 + 77 + 96 + 64
    assert run.metrics["e2el_median"] == pytest.approx((4.12 + 4.37) / 2)
    assert run.metrics["output_throughput"] == pytest.approx(365 / (7.81 + 4.12 + 4.37 + 3.66))
    assert any("(prompt + completion tokens) / latency" in n for n in run.notes)


def test_several_pieces_are_one_record_with_a_row_each_and_nothing_pooled():
    paths = [str(HERE / "metis_completion.json"), str(HERE / "sophia_completion.json")]
    config = inference.SPEC.validate({"log_path": paths})
    assert inference.plan(config).path == "log"
    run = inference.run_exercise(config)
    assert run.metrics["requests"] == 2 and run.metrics["output_tokens"] == 128 + 95
    assert "server_ttft_median" not in run.metrics  # one server's timing is not the pair's
    table = inference.evidence_table(run)
    assert list(table["model"]) == ["gpt-oss-120b-131072", "openai/gpt-oss-120b"]
    assert list(table["server: TTFT"]) == ["0.196 s", "not given"]


def test_text_that_is_no_evidence_is_refused_with_its_name(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("Llama appears to be faster.\n")
    with pytest.raises(ValueError, match="notes.txt: no chat-completion JSON"):
        inference.read_evidence([str(path)])
    assert labkit.logs.read(str(path)).format is None
