"""The load generator on the stand-in server, for real over loopback: reasoning deltas counted apart from the
answer (and an empty answer at max_tokens counted as completed), request-rate arrivals scheduled
ahead, synthetic lengths, the readiness check (a model the endpoint does not serve, a renamed one),
and a bounded knee search."""

import statistics

import pytest

pytest.importorskip("openai")
serving = pytest.importorskip("labkit.serving")

from labkit.params import ParameterError  # noqa: E402
from labkit.testbeds.sambanova import inference  # noqa: E402
from labkit.testbeds.sambanova.inference import access  # noqa: E402
from labkit.testbeds.sambanova.inference.client import Endpoint, Options, arrival_times, run_batch  # noqa: E402
from labkit.testbeds.sambanova.inference.measure import count_tokens, measure  # noqa: E402
from labkit.testbeds.sambanova.inference.report import reasoning_notes  # noqa: E402
from labkit.testbeds.sambanova.inference.prompts import synthetic_prompts  # noqa: E402
from labkit.testbeds.sambanova.inference.report import fmt_time  # noqa: E402
from labkit.testbeds.sambanova.inference.timing import configuration_rows, summarize  # noqa: E402

KEY = "labkit-test-key-load"
PROMPTS = [(0, "What is a KV cache?"), (1, "Explain goodput."), (2, "Why stream?")]


@pytest.fixture(scope="module")
def thinking():
    """The stand-in answering as gpt-oss on vLLM does: 4 reasoning tokens first, in `reasoning` deltas."""
    with serving.start_server(config="batched", model_size="tiny", api_key=KEY, reasoning_tokens=4,
                              reasoning_field="reasoning") as server:
        yield server


def endpoint(server, model=None, name="stand-in"):
    return Endpoint(name, server.base_url, model or server.model, access.Secret(KEY, "test"), local=True)


def test_reasoning_deltas_are_timed_and_counted_apart_from_the_answer(thinking):
    traces, _ = run_batch(endpoint(thinking), PROMPTS, 2, Options(max_tokens=10, ignore_eos=True))
    for trace in traces:
        assert trace.ok and trace.finish_reason == "length" and trace.output_tokens == 10
        # usage.completion_tokens_details gives the split; the stream's reasoning text came apart from content
        assert (trace.reasoning_tokens, trace.answer_tokens) == (4, 6)
        assert trace.reasoning_text and len(trace.answer_times) < len(trace.chunk_times)
        assert trace.ttft < trace.ttft_answer <= trace.e2el  # first token of any kind, then the first answer token
    figures = summarize(traces, 1.0)
    assert figures["reasoning_tokens"] == 12 and figures["answer_tokens"] == 18
    assert figures["finish_reasons"] == {"length": 3} and figures["ttft_answer_median_s"] > figures["ttft_median_s"]


def test_without_usage_details_the_split_is_counted_from_the_chunks(thinking):
    traces, _ = run_batch(endpoint(thinking), PROMPTS[:1], 1, Options(max_tokens=8, ignore_eos=True))
    trace = traces[0]
    trace.reasoning_tokens = trace.answer_tokens = None
    trace.usage.pop("completion_tokens_details")
    count_tokens(traces, {})
    assert trace.reasoning_tokens + trace.answer_tokens == 8 and trace.reasoning_tokens >= 1


def test_an_answer_spent_on_reasoning_is_a_completed_request_and_the_notes_say_so(thinking):
    traces, _ = run_batch(endpoint(thinking), PROMPTS[:2], 2, Options(max_tokens=3, ignore_eos=True))
    assert all(t.ok and t.empty_answer and t.text == "" and t.ttft_answer is None for t in traces)
    figures = summarize(traces, 1.0, {"ttft": 10.0})
    assert figures["completed"] == 2 and figures["failed"] == 0 and figures["empty_answers"] == 2
    notes = reasoning_notes([{"endpoint": "a", "concurrency": 1, "empty_answers": 2, "finish_reasons": {"length": 2},
                              "reasoning_tokens_per_request": 3.0, "answer_tokens_per_request": 0.0},
                             {"endpoint": "b", "concurrency": 1, "empty_answers": 0, "finish_reasons": {"stop": 2},
                              "reasoning_tokens_per_request": 0.0, "answer_tokens_per_request": 9.0}])
    assert any("completed requests" in n and "not failures" in n for n in notes)
    assert any("ended their answers differently" in n and "a: 2 x length" in n for n in notes)


def test_arrivals_are_poisson_by_default_and_burstier_below_one():
    gaps = lambda times: [b - a for a, b in zip(times, times[1:])]  # noqa: E731
    poisson = gaps(arrival_times(4000, rate=10.0, burstiness=1.0, seed=1))
    bursty = gaps(arrival_times(4000, rate=10.0, burstiness=0.25, seed=1))
    for sample in (poisson, bursty):
        assert statistics.mean(sample) == pytest.approx(0.1, rel=0.1)  # the rate is kept whatever the shape
    cv2 = lambda s: statistics.pvariance(s) / statistics.mean(s) ** 2  # noqa: E731
    assert cv2(poisson) == pytest.approx(1.0, rel=0.15) and cv2(bursty) == pytest.approx(4.0, rel=0.25)
    assert arrival_times(3, 5.0, seed=7) == arrival_times(3, 5.0, seed=7)


@pytest.mark.timing  # each request within 0.5 s of its scheduled time
def test_a_request_rate_sends_each_request_at_its_scheduled_time(thinking):
    prompts = [(k, "Tell me about rates.") for k in range(6)]
    traces, duration = run_batch(endpoint(thinking), prompts, 6, Options(max_tokens=4), rate=20.0, seed=3)
    due = arrival_times(6, 20.0, seed=3)
    assert [t.scheduled for t in traces] == due
    assert all(t.ok and 0 <= t.late < 0.5 for t in traces)
    assert duration >= due[-1]  # the last arrival was not sent early


def test_synthetic_prompts_have_the_asked_lengths():
    texts = ["one two three four five six seven eight nine ten"]
    fixed = synthetic_prompts(texts, 3, input_tokens=7, output_tokens=None)
    assert [len(p.split()) for p in fixed] == [7, 7, 7]
    spread = synthetic_prompts(texts, 50, input_tokens=10, output_tokens=20, spread=0.5, seed=2)
    assert all(5 <= len(p.split()) <= 15 and 10 <= n <= 30 for p, n in spread)
    assert len({n for _, n in spread}) > 3


def test_readiness_names_what_an_endpoint_serves_and_maps_a_renamed_model(thinking, monkeypatch):
    missing = endpoint(thinking, model="gpt-oss-120b-131072", name="Metis")
    found = access.readiness(missing)
    assert not found.ready and found.models == [thinking.model]
    assert found.sentence == "Metis does not serve gpt-oss-120b-131072: it serves now {}".format(thinking.model)
    monkeypatch.setitem(access.RENAMED, "labkit-old-name", (thinking.model, "renamed in a test"))
    old = endpoint(thinking, model="labkit-old-name", name="Old")
    ready = access.readiness(old)
    assert ready.ready and old.model == thinking.model
    assert "labkit-old-name is now {} (renamed in a test)".format(thinking.model) in ready.sentence
    assert access.readiness(endpoint(thinking)).sentence.endswith("is served (GET /models lists it)")


def test_the_cluster_jobs_answer_says_loaded_queued_or_cold():
    jobs = {"running": [{"Model": "openai/gpt-oss-120b", "Model Status": "running"}],
            "queued": [{"Models": "google/gemma-4-31B-it", "Job State": "queued"}]}
    assert access.job_state(jobs, "openai/gpt-oss-120b") == "running"
    assert access.job_state({"jobs": [{"model": "google/gemma-4-31B-it", "status": "queued"}]},
                              "google/gemma-4-31B-it") == "queued"
    assert access.job_state(jobs, "openai/gpt-oss-20b") == "cold" and "10-15 min" in access.COLD
    assert access.cluster_of(inference.ENDPOINTS["sophia"]["base_url"]) == "sophia"


def test_a_knee_search_is_bounded_and_finds_a_knee_per_endpoint(thinking):
    measured = measure([endpoint(thinking, name="a")], [p for _, p in PROMPTS], levels=[1], repeats=1, warmup=0,
                       options=Options(max_tokens=4), targets={"ttft": 5.0}, show_progress=False,
                       knee={"max_requests": 12, "max_s": 20.0})
    knee = measured.knees["a"]
    assert knee["requests"] <= 12 and knee["load"] in (1, 2, 4) and knee["stopped"]
    assert [b.concurrency for b in measured.batches] == sorted(b.concurrency for b in measured.batches)
    rows = configuration_rows(measured.batches)
    assert [r["load"] for r in rows] == [b.concurrency for b in measured.batches]


def test_times_print_in_milliseconds_with_three_significant_digits():
    assert [fmt_time(v) for v in (0.00214, 0.0214, 0.214, 1.2345, 0.009996, 0.0009996)] == [
        "2.14 ms", "21.4 ms", "214 ms", "1234 ms", "10.0 ms", "1.00 ms"]
    assert [fmt_time(v) for v in (0.0002, 7.9e-6, 0)] == ["200 µs", "7.90 µs", "0 ms"]
    assert fmt_time(float("nan")) == "n/a"


def test_a_percentile_table_keeps_its_width_when_tokens_come_microseconds_apart():
    """The stand-in can stream a row's tokens under 0.1 ms apart (99.0 µs here), and
    "0.0990 ms" in four columns would make pandas wrap the table, and the golden copy's text would differ."""
    from types import SimpleNamespace

    from labkit.testbeds.sambanova.inference.report import percentile_table

    def table(seconds):
        rows = [dict({"endpoint": "sequential", "concurrency": 2},
                     **{"{}_{}_s".format(name, stat): seconds for name in ("ttft", "tpot", "itl", "e2el")
                        for stat in ("mean", "median", "p90", "p99")})]
        return percentile_table(SimpleNamespace(details={"rows": rows})).to_string(line_width=80)

    usual = table(0.0272)
    assert "\\" not in usual
    for seconds in (7.9e-6, 9.9e-5, 0.00079, 0.009996, 9.9):
        text = table(seconds)
        assert "\\" not in text and max(map(len, text.splitlines())) <= max(map(len, usual.splitlines())), text


def test_the_spec_checks_the_load_parameters():
    with pytest.raises(ParameterError, match="knee = True: .*goodput needs a target"):
        inference.SPEC.validate({"knee": True, "ttft_target_s": None, "tpot_target_s": None})
    with pytest.raises(ParameterError, match="max_concurrency"):
        inference.SPEC.validate({"max_concurrency": 4})
    with pytest.raises(ParameterError, match="request_rate"):
        inference.SPEC.validate({"request_rate": [0.0]})
    config = inference.SPEC.validate({"request_rate": [2, 4], "max_concurrency": 4, "burstiness": 0.5})
    assert config.request_rate == [2.0, 4.0]
    assert inference.ENDPOINTS["metis"]["model"] == "gpt-oss-120b" and "minerva" in inference.ENDPOINTS
