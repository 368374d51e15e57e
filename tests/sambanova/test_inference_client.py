"""The measuring client against labkit's stand-in server, for real over loopback (no mocks): a
measured batch, each failure with its status and its one sentence (401, 404, 429, timeout), partial
results kept, and an interrupt (a real SIGINT) that closes the streams in flight."""

import os
import re
import signal
import threading
import time

import pytest

pytest.importorskip("openai")
serving = pytest.importorskip("labkit.serving")

from labkit.testbeds.sambanova.inference.access import Secret, explain  # noqa: E402
from labkit.testbeds.sambanova.inference.client import Endpoint, Options, open_client, run_batch, stream_request  # noqa: E402,E501
from labkit.testbeds.sambanova.inference.timing import Trace  # noqa: E402
from labkit.testbeds.sambanova.inference.measure import measure  # noqa: E402

KEY = "labkit-test-key-0f9e8d7c"
PROMPTS = [(0, "What is a KV cache?"), (1, "Explain goodput."), (2, "Why stream?")]


@pytest.fixture(scope="module")
def batched():
    with serving.start_server(config="batched", model_size="tiny", api_key=KEY) as server:
        yield server


def endpoint(server, key=KEY, base_url=None, model=None):
    return Endpoint("stand-in", base_url or server.base_url, model or server.model, Secret(key, "test"), local=True)


def test_a_batch_streams_every_request_and_keeps_time_stamps_and_the_servers_usage(batched):
    traces, duration = run_batch(endpoint(batched), PROMPTS, concurrency=2, options=Options(max_tokens=6))
    assert [t.status for t in traces] == ["ok"] * 3 and duration > 0
    for t in traces:
        assert t.output_tokens == t.usage["completion_tokens"] and 1 <= t.output_tokens <= 6
        assert t.token_source == "server usage" and t.text
        assert t.chunk_times == sorted(t.chunk_times) and t.start < t.chunk_times[0]
        assert 0 < t.ttft <= t.e2el <= duration
        assert isinstance(t.usage.get("time_to_first_token"), float)  # the server's own clock, kept apart


def test_a_wrong_key_is_a_401_and_its_sentence_says_how_to_refresh(batched):
    traces, _ = run_batch(endpoint(batched, key="expired"), PROMPTS[:2], 2, Options(max_tokens=4))
    assert [(t.status, t.http_status) for t in traces] == [("401", 401), ("401", 401)]
    sentence = explain("401", "Metis", "https://x/v1")
    assert "inference_auth_token.py authenticate --force" in sentence and sentence.count(".") <= 2


@pytest.mark.parametrize("wrong", ["path", "model"])
def test_a_wrong_path_or_model_is_a_404_kept_with_the_others(batched, wrong):
    target = endpoint(batched, base_url=batched.base_url + "/chat/completions") if wrong == "path" else \
        endpoint(batched, model="gpt-oss-120b-131072")
    traces, _ = run_batch(target, PROMPTS[:1], 1, Options(max_tokens=4))
    assert traces[0].status == "404" and traces[0].chunk_times == []
    assert "no trailing slash and without /chat/completions" in explain("404", "Metis", target.base_url)


@pytest.mark.timing
def test_a_full_queue_is_a_429_and_the_request_decoded_is_kept():
    with serving.start_server(config="sequential", model_size="tiny", max_queue=0) as server:
        target = Endpoint("seq", server.base_url, server.model, Secret("none"), local=True)
        sdk = open_client(target, Options())
        long = Trace(endpoint="seq")
        # 480 tokens run to the end (ignore_eos): about 1.5 s of decoding on an idle machine, during
        # which the second request must arrive (150 tokens ended first under two busy loops: 1 run in 2)
        first = threading.Thread(target=stream_request, args=(sdk, target, "A long answer, please.",
                                                              Options(max_tokens=480, ignore_eos=True), long))
        first.start()
        deadline = time.monotonic() + 60
        while not long.chunk_times and time.monotonic() < deadline:  # decoding: the one place is taken
            time.sleep(0.05)
        refused, _ = run_batch(target, PROMPTS[:1], 1, Options(max_tokens=4), sdk=sdk)
        first.join(120)
        sdk.close()
    assert [(t.status, t.http_status) for t in refused] == [("429", 429)]
    assert long.status == "ok" and long.output_tokens and long.e2el > 0  # the request decoded is measured
    assert "lower the concurrency" in explain("429", "seq", server.base_url)


@pytest.mark.timing
def test_an_answer_slower_than_timeout_s_is_a_timeout_and_the_rest_is_kept():
    with serving.start_server(config="sequential", model_size="tiny", max_queue=4) as server:
        target = Endpoint("seq", server.base_url, server.model, Secret("none"), local=True)
        # one decodes a long answer; the other waits in the queue, silent past the read timeout
        # (480 tokens take about 1.5 s here: a machine twice as fast still outlasts the 0.5 s timeout)
        traces, _ = run_batch(target, PROMPTS[:2], 2, Options(max_tokens=480, timeout_s=0.5))
    assert sorted(t.status for t in traces) == ["ok", "timeout"], [(t.status, t.error, t.output_tokens) for t in traces]
    done = next(t for t in traces if t.status == "ok")
    assert done.e2el > 0.5 and done.output_tokens == 480  # long enough for the other to time out in the queue
    assert "raise timeout_s" in explain("timeout", "seq", server.base_url, 1.0)


def test_max_tokens_beyond_the_context_is_a_400_that_says_so(batched):
    traces, _ = run_batch(endpoint(batched), PROMPTS[:1], 1, Options(max_tokens=5000))
    assert traces[0].status == "400" and "context length" in traces[0].error
    assert "lower max_tokens" in explain("400", "stand-in", batched.base_url)


@pytest.mark.timing
def test_an_interrupt_closes_the_streams_in_flight_and_keeps_the_batches_before(batched):
    def interrupt_later():
        time.sleep(3.0)
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Thread(target=interrupt_later)
    timer.start()
    begin = time.monotonic()
    measured = measure([endpoint(batched)], [p for _, p in PROMPTS], levels=[1, 3], repeats=20, warmup=1,
                       options=Options(max_tokens=24), show_progress=False)
    elapsed = time.monotonic() - begin
    timer.join()
    assert re.fullmatch(r"interrupted at batch \d+/40", measured.stopped), measured.stopped
    assert len(measured.warmup) == 1 and measured.warmup[0].status == "ok"
    statuses = {t.status for t in measured.traces}
    assert "ok" in statuses and statuses <= {"ok", "interrupted"}
    assert len(measured.batches) < 40 and elapsed < 60  # it stopped, long before 40 batches
    assert all(b.figures for b in measured.batches)  # every batch kept, the one stopped included


@pytest.mark.timing
def test_an_interrupt_the_moment_the_bar_appears_returns_the_run_not_a_keyboard_interrupt(batched, monkeypatch):
    # A student presses Interrupt as soon as the bar shows (tests/test_editing_cells.py does the
    # same through a kernel, where the bar could show before the interrupt was caught).
    from labkit import progress

    real_bar = progress.bar

    def bar_then_interrupt(*args, **kwargs):
        shown = real_bar(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return shown

    monkeypatch.setattr(progress, "bar", bar_then_interrupt)
    measured = measure([endpoint(batched)], [p for _, p in PROMPTS], levels=[1], repeats=2, warmup=1,
                       options=Options(max_tokens=4), show_progress=True)
    assert measured.stopped == "interrupted at batch 1/2"
    assert measured.batches == [] and measured.warmup == []
