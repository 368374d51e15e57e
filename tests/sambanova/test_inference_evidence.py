"""Pasted evidence (tests/sambanova/evidence/, shapes from the OpenAI API reference and the course's
Metis page; see its README) read like a log into sambanova/inference records."""

import json
from pathlib import Path

import pytest

import labkit.logs
from labkit.exercises import metric_table as table_for
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


# Fall 2025 hand-ins: several curl answers in one transcript, a student's results JSON per endpoint.

def _notes(run):
    return " ".join(run.notes)


def _runs(path):
    report = labkit.logs.read(str(path))
    assert report.format == "openai", report.notes
    for run in report.runs:
        assert run.exercise == "sambanova/inference" and table_for(run.exercise).check(run) == []
    return report.runs


def test_each_answer_of_a_curl_transcript_is_paired_with_its_own_time():
    first, second = _runs(HERE / "metis_two_models_curl_time.txt")
    assert [r.metrics["e2el_median"] for r in (first, second)] == [pytest.approx(1.369), pytest.approx(1.030)]
    assert [r.params["model"] for r in (first, second)] == ["gpt-oss-120b-131072", "Llama-4-Maverick-17B-128E-Instruct"]
    assert [r.params["finish_reason"] for r in (first, second)] == ["length", "stop"]
    assert first.params["endpoint"] == second.params["endpoint"] == "metis" and first.params["max_tokens"] == 128
    assert [r.metrics["output_tokens"] for r in (first, second)] == [128, 47]
    assert first.metrics["server_total_latency_median"] == pytest.approx(0.6086)
    for run in (first, second):
        notes = _notes(run)
        assert "compare 2 models (Llama-4-Maverick-17B-128E-Instruct, gpt-oss-120b-131072) on one endpoint (metis), " \
               "not two endpoints" in notes
        assert "finish reasons differ (length for gpt-oss-120b-131072, stop for Llama-4-Maverick-17B-128E-Instruct)" in notes
        assert "lengths differ (completion tokens: 128 for gpt-oss-120b-131072, 47 for " in notes
    assert "stopped at its max_tokens of 128 (finish_reason length): the request completed" in _notes(first)
    assert "reasoning beside its content" in _notes(first) and "reasoning" not in _notes(second)


def test_zsh_time_lines_are_paired_the_same_way(tmp_path):
    text = (HERE / "metis_two_models_curl_time.txt").read_text()
    for real in ("1.369", "1.030"):
        text = text.replace("real\t0m{}s\nuser\t0m0.021s\nsys\t0m0.011s".format(real),
                            "curl -X POST  -H  -H  -d   0.02s user 0.01s system 1% cpu {} total".format(real))
        text = text.replace("real\t0m{}s\nuser\t0m0.019s\nsys\t0m0.010s".format(real),
                            "curl -X POST  -H  -H  -d   0.02s user 0.01s system 3% cpu {} total".format(real))
    assert "real" not in text
    path = tmp_path / "homework.md"
    path.write_text(text)
    assert [r.metrics["e2el_median"] for r in _runs(path)] == [pytest.approx(1.369), pytest.approx(1.030)]


def test_an_answer_without_its_own_time_takes_none_from_the_next(tmp_path):
    text = (HERE / "metis_two_models_curl_time.txt").read_text().replace("real\t0m1.369s\n", "")
    path = tmp_path / "transcript.txt"
    path.write_text(text)
    first, second = _runs(path)
    assert "e2el_median" not in first.metrics and second.metrics["e2el_median"] == pytest.approx(1.030)


def test_the_same_model_on_two_endpoints_is_no_model_comparison(tmp_path):
    metis = (HERE / "metis_curl_time.txt").read_text()
    sophia = ('$ time curl -X POST "https://inference-api.alcf.anl.gov/resource_server/sophia/vllm/v1/chat/completions" '
              '-H "Authorization: Bearer ${access_token}" -H "Content-Type: application/json" '
              '-d \'{"model": "openai/gpt-oss-120b", "messages":[{"role": "user", "content": "Explain quantum computing '
              'in simple terms."}]}\'\n' + (HERE / "sophia_completion.json").read_text().strip() +
              "\nreal\t0m2.514s\nuser\t0m0.030s\nsys\t0m0.012s\n")
    path = tmp_path / "both.txt"
    path.write_text(metis + "\n" + sophia)
    first, second = _runs(path)
    assert (first.params["endpoint"], second.params["endpoint"]) == ("metis", "sophia")
    assert [r.metrics["e2el_median"] for r in (first, second)] == [pytest.approx(4.990), pytest.approx(2.514)]
    notes = _notes(first)
    assert "models" not in notes.split("One request")[1] and "finish reasons differ" not in notes
    assert "lengths differ (completion tokens: 128 for metis, 95 for sophia)" in notes


def test_a_students_results_per_endpoint_count_completion_tokens_and_name_what_its_statistics_got_wrong():
    (run,) = _runs(HERE / "student_results_by_endpoint.json")
    data = json.loads((HERE / "student_results_by_endpoint.json").read_text())
    metis, sophia = data["metis"]["results"], data["sophia"]["results"]
    assert run.params["endpoint_names"] == ["metis", "sophia"] and run.metrics["endpoints"] == 2
    assert run.params["models"] == ["gpt-oss-120b-131072", "openai/gpt-oss-120b"] and run.params["dataset"] == "SQuAD"
    completion = sum(r["usage"]["completion_tokens"] for r in metis + sophia)
    assert run.metrics["requests"] == 10 and run.metrics["output_tokens"] == completion == 588  # never total tokens
    # the counts are the whole run's (both endpoints', as a measured run's); every figure is one endpoint's,
    # the mean answer length too (never both endpoints' answers pooled), and the note says which
    assert run.metrics["output_tokens_per_request"] == pytest.approx(264 / 5)  # metis's 5 answers
    assert [(e["name"], e["requests"], e["requests_completed"], e["output_tokens"])
            for e in run.environment["endpoints"]] == [("metis", 5, 5, 264), ("sophia", 5, 5, 324)]
    assert "are metis's, the first endpoint's; its counts (requests, output tokens) are the whole run's" in _notes(run)
    # the record's own figures are the first endpoint's; each endpoint's are its series, never pooled
    assert run.metrics["e2el_median"] == 4.987
    metis_rate = sum(r["usage"]["completion_tokens"] for r in metis) / sum(r["latency_sec"] for r in metis)
    assert run.metrics["output_throughput"] == pytest.approx(metis_rate)
    assert run.series["e2el_median_latency:sophia"] == {"x": [1], "y": [1.402], "x_label": "concurrency"}
    assert run.series["output_throughput:sophia"]["y"] == [pytest.approx(324 / 7.987)]
    notes = _notes(run)
    claimed = data["metis"]["statistics"]["throughput_tokens_per_sec"]
    assert "metis: The results' own throughput_tokens_per_sec of {:.2f} tokens/s counts prompt tokens as output".format(
        claimed) in notes and "give {:.2f} tokens/s".format(metis_rate) in notes
    assert "so no concurrency was measured" in notes and "the requests were not streamed" in notes
    assert "sophia: 1 of 5 responses stopped at max_tokens" in notes
    assert "finish reasons differ (metis 5 stop; sophia 4 stop, 1 length)" in notes
    assert "ttft_median" not in run.metrics and "different models" not in notes  # one model under two names
    table = inference.evidence_table(inference.read_evidence([str(HERE / "student_results_by_endpoint.json")]))
    assert list(table["endpoint"]) == ["metis", "sophia"] and list(table["client: E2EL"]) == ["4.987 s", "1.402 s"]


def _results_file(tmp_path, records, statistics=None):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"endpoint": "https://inference-api.alcf.anl.gov/resource_server/sophia/vllm/v1",
                                "results": records, "statistics": statistics or {}}))
    (run,) = _runs(path)
    return run


def test_streamed_concurrent_results_and_right_statistics_are_not_flagged(tmp_path):
    records = [{"latency_s": 2.0, "ttft_s": 0.25 + 0.01 * i, "start_time": 100.0 + 0.5 * i, "finish_reason": "stop",
                "usage": {"prompt_tokens": 50, "completion_tokens": 100, "total_tokens": 150}} for i in range(4)]
    run = _results_file(tmp_path, records, {"throughput_tokens_per_sec": 400 / 8.0})
    assert run.metrics["ttft_median"] == pytest.approx(0.265) and run.params["endpoint_names"] == ["sophia"]
    notes = _notes(run)
    assert "no concurrency was measured" not in notes and "not streamed" not in notes
    assert "throughput_tokens_per_sec" not in notes  # completion tokens / summed latency: what the records give
    assert "e2el_median_latency:sophia" not in run.series  # in flight together: no concurrency level to put it at


def test_a_claimed_throughput_the_requests_do_not_give_is_named(tmp_path):
    records = [{"latency": 2.0, "completion_tokens": 100, "prompt_tokens": 50} for _ in range(3)]
    run = _results_file(tmp_path, records, {"throughput_tokens_per_sec": 999.0})
    assert "throughput_tokens_per_sec of 999.00 tokens/s is not what the requests give: their completion tokens / " \
           "summed latency is 50.00 tokens/s" in _notes(run)


def test_a_results_json_per_endpoint_counts_for_the_2025_homework_and_is_re_read(tmp_path, monkeypatch):
    from labkit.grading.recompute import from_evidence
    from labkit.testbeds.homework import fall2025
    from labkit.testbeds.homework.report import endpoint_table

    folder = tmp_path / "logs" / "sambanova"
    folder.mkdir(parents=True)
    (folder / "metis_vs_sophia.json").write_text((HERE / "student_results_by_endpoint.json").read_text())
    monkeypatch.chdir(tmp_path)
    (run,) = fall2025.runs_for(fall2025.SPEC.validate({}), "sambanova", verbose=False)
    assert run.metrics["endpoints"] == 2 and run.metrics["requests"] == 10
    trusted = from_evidence(dict(run.params))
    assert trusted["metrics"] == run.metrics
    table = endpoint_table([run])
    assert list(table["endpoint"]) == ["metis", "sophia"] and list(table["concurrency"]) == [1, 1]


def test_an_error_answer_keeps_its_own_time_and_is_a_failed_request(tmp_path):
    path = tmp_path / "transcript.txt"
    path.write_text('$ time curl -X POST "https://inference-api.alcf.anl.gov/resource_server/metis/api/v1/chat/completions"'
                    ' -d \'{"model": "gpt-oss-120b", "messages": []}\'\n'
                    '{"error": {"message": "Model gpt-oss-120b not found", "code": 404}}\n'
                    "real\t0m0.412s\nuser\t0m0.020s\nsys\t0m0.010s\n" + (HERE / "metis_curl_time.txt").read_text())
    failed, answered = _runs(path)
    assert failed.status == "failed" and failed.metrics["requests_failed"] == 1 and "e2el_median" not in failed.metrics
    assert "Model gpt-oss-120b not found" in _notes(failed)
    assert answered.status == "complete" and answered.metrics["e2el_median"] == pytest.approx(4.990)


def test_one_list_whose_requests_name_two_endpoints_is_read_per_endpoint(tmp_path):
    records = [{"endpoint": endpoint, "model": model, "latency_ms": ms, "finish_reason": "stop",
                "metadata": {"prompt_tokens": 30, "completion_tokens": 60, "total_tokens": 90}}
               for endpoint, model, ms in (("metis", "gpt-oss-120b-131072", 5000), ("sophia", "openai/gpt-oss-120b", 1500),
                                           ("metis", "gpt-oss-120b-131072", 4000), ("sophia", "openai/gpt-oss-120b", 2500))]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(records))
    (run,) = _runs(path)
    assert run.params["endpoint_names"] == ["metis", "sophia"] and run.metrics["output_tokens"] == 240
    assert run.metrics["e2el_median"] == pytest.approx(4.5) and run.series["e2el_median_latency:sophia"]["y"] == [2.0]
    assert "finish reasons differ" not in _notes(run) and "differ in length" not in _notes(run)
