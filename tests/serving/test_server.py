"""The local OpenAI-compatible server over real loopback HTTP, through the real ``openai`` SDK
and ``httpx``: streaming and not, usage and the server's timings, determinism at temperature 0,
16 concurrent streams with batching, the error statuses a client must handle, and stopping.

Two servers for the whole file (each start imports torch and transformers: seconds):
``batched`` (open) and ``sequential`` (an API key, one request may wait: 429 is reachable).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import httpx
import openai
import pytest

from labkit import serving
from tests.serving.processes import gone, listening

KEY = "test-key-not-secret"


@pytest.fixture(scope="module")
def batched():
    with serving.start_server(config="batched", model_size="tiny") as server:
        yield server


@pytest.fixture(scope="module")
def sequential():
    with serving.start_server(config="sequential", model_size="tiny", max_queue=1, api_key=KEY) as server:
        yield server


def _client(server, key=None):
    return openai.OpenAI(base_url=server.base_url, api_key=key or server.api_key, max_retries=0, timeout=60)


def _chat(content, **extra):
    return dict(messages=[{"role": "user", "content": content}], **extra)


def _stream(client, model, content, max_tokens=16, **extra):
    """(text, finish_reason, usage, number of chunks with text) of one streamed completion."""
    stream = client.chat.completions.create(model=model, stream=True, stream_options={"include_usage": True},
                                            max_tokens=max_tokens, **_chat(content, **extra))
    text, finish, usage, pieces = "", None, None, 0
    for chunk in stream:
        if chunk.choices:
            delta = chunk.choices[0].delta.content
            if delta:
                text += delta
                pieces += 1
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage is not None:
            usage = chunk.usage
    return text, finish, usage, pieces


def test_models_lists_the_one_model_served(batched):
    models = _client(batched).models.list()
    assert [m.id for m in models.data] == [batched.model] == ["labkit-llama-tiny"]
    assert batched.base_url.startswith("http://127.0.0.1:") and batched.base_url.endswith("/v1")


def test_a_completion_has_usage_with_the_servers_timings(batched):
    reply = _client(batched).chat.completions.create(model=batched.model, max_tokens=12, temperature=0,
                                                     **_chat("What is a KV cache?"))
    usage = reply.usage
    assert reply.object == "chat.completion" and reply.choices[0].message.role == "assistant"
    assert reply.choices[0].finish_reason in ("stop", "length")
    assert 1 <= usage.completion_tokens <= 12 and usage.prompt_tokens > 5
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    timings = usage.model_extra
    assert 0 < timings["time_to_first_token"] <= timings["total_latency"]
    assert timings["completion_tokens_per_sec"] == pytest.approx(usage.completion_tokens / timings["total_latency"])
    assert timings["end_time"] - timings["start_time"] == pytest.approx(timings["total_latency"], abs=1e-5)
    assert timings["is_last_response"] is True and timings["stop_reason"] == reply.choices[0].finish_reason


def test_a_stream_is_server_sent_events_ending_in_done(batched):
    body = {"model": batched.model, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 8,
            "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    with httpx.stream("POST", batched.base_url + "/chat/completions", json=body, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        lines = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[len("data: "):]) for line in lines[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"} and len({c["id"] for c in chunks}) == 1
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] >= 1
    assert chunks[-2]["choices"][0]["finish_reason"] in ("stop", "length")


def test_streamed_and_not_streamed_agree_and_temperature_zero_repeats(batched):
    client = _client(batched)
    first = _stream(client, batched.model, "Tell me about rotary positions.", max_tokens=20, temperature=0)
    again = _stream(client, batched.model, "Tell me about rotary positions.", max_tokens=20, temperature=0)
    whole = client.chat.completions.create(model=batched.model, max_tokens=20, temperature=0,
                                           **_chat("Tell me about rotary positions."))
    assert first[0] == again[0] == whole.choices[0].message.content and first[0]
    assert first[2].completion_tokens == whole.usage.completion_tokens
    other = _stream(client, batched.model, "A different question.", max_tokens=20, temperature=0)
    assert other[0] != first[0]


def test_a_seed_repeats_a_sampled_completion(batched):
    client = _client(batched)
    runs = [_stream(client, batched.model, "Sample me.", max_tokens=20, temperature=1.0, seed=seed)[0]
            for seed in (7, 7, 8)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_ignore_eos_runs_a_sampled_completion_to_max_tokens(batched):
    client = _client(batched)

    def finished(**extra):
        done = client.chat.completions.create(model=batched.model, max_tokens=120, seed=100, **_chat("x"), **extra)
        return done.choices[0].finish_reason, done.usage.completion_tokens

    # seed 100 chooses end-of-text at token 39 (found by search; the same at the default, avx2
    # and avx512 kernels); ignore_eos takes it to max_tokens
    assert finished() == ("stop", 39)
    assert finished(extra_body={"ignore_eos": True}) == ("length", 120)


def test_sixteen_concurrent_streams_all_finish_and_are_decoded_together(batched):
    client, results, errors = _client(batched), [], []

    def one(i):
        try:
            results.append(_stream(client, batched.model, "Prompt number {}.".format(i), max_tokens=32,
                                   temperature=0))
        except Exception as error:  # counted, never dropped
            errors.append(error)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors and len(results) == 16
    assert all(finish in ("stop", "length") and usage.completion_tokens >= 1 for _, finish, usage, _ in results)
    assert max(usage.model_extra["batch_size_used"] for _, _, usage, _ in results) > 4


def test_an_unknown_model_or_path_is_a_404_with_an_openai_error_body(batched):
    # closed here: the error's traceback holds the client in a cycle, which the garbage collector may
    # take apart socket first (a ResourceWarning under openai 1.55 and httpx 0.24)
    with _client(batched) as client, pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="gpt-oss-120b", max_tokens=4, **_chat("hi"))
    assert caught.value.status_code == 404 and caught.value.code == "model_not_found"
    for method, url in (("POST", "/chat/completions/"), ("GET", "/chat/completion"), ("POST", "/v2/chat")):
        response = httpx.request(method, batched.base_url + url, json={})
        assert response.status_code == 404 and "no such route" in response.json()["error"]["message"]


@pytest.mark.parametrize("change, param", [
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "robot", "content": "hi"}]}, "messages"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": 100000}, "max_tokens"),
    ({"temperature": -1}, "temperature"),
    ({"stream_options": {"include_usage": True}}, "stream_options"),
    ({"n": 2}, "n"),
    ({"ignore_eos": "yes"}, "ignore_eos"),
])
def test_bad_input_is_a_400_naming_the_parameter(batched, change, param):
    body = {"model": batched.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, **change}
    response = httpx.post(batched.base_url + "/chat/completions", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param and response.json()["error"]["type"] == "invalid_request_error"


def test_a_body_that_is_not_json_is_a_400_and_another_method_a_405(batched):
    response = httpx.post(batched.base_url + "/chat/completions", content=b"{not json")
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]["message"]
    response = httpx.delete(batched.base_url + "/models")
    assert response.status_code == 405 and response.json()["error"]["code"] == "method_not_allowed"


def test_a_missing_or_wrong_key_is_a_401(sequential):
    with _client(sequential, key="wrong") as client, pytest.raises(openai.AuthenticationError):
        client.models.list()  # closed: see test_an_unknown_model_or_path_is_a_404_with_an_openai_error_body
    response = httpx.get(sequential.base_url + "/models")
    assert response.status_code == 401 and response.json()["error"]["code"] == "invalid_api_key"
    assert [m.id for m in _client(sequential, key=KEY).models.list().data] == [sequential.model]


@pytest.mark.timing
def test_sequential_decodes_one_at_a_time_and_a_full_queue_is_a_429(sequential):
    assert _idle(sequential)
    client = _client(sequential, key=KEY)
    started, results, refused = threading.Barrier(3), [], []

    def long_stream():
        stream = client.chat.completions.create(model=sequential.model, max_tokens=300, stream=True,
                                                stream_options={"include_usage": True},
                                                extra_body={"ignore_eos": True}, **_chat("long"))
        started.wait(30)
        results.append([c.usage for c in stream if c.usage is not None][0])

    threads = [threading.Thread(target=long_stream) for _ in range(2)]
    for thread in threads:
        thread.start()
    started.wait(30)  # both accepted: one decoding, one waiting, and max_queue is 1
    try:
        client.chat.completions.create(model=sequential.model, max_tokens=4, **_chat("one too many"))
    except openai.RateLimitError as error:
        refused.append(error)
    for thread in threads:
        thread.join(60)
    assert len(refused) == 1 and refused[0].status_code == 429 and refused[0].code == "queue_full"
    assert len(results) == 2 and all(u.model_extra["batch_size_used"] == 1 for u in results)
    waited = max(u.model_extra["time_in_queue"] for u in results)
    assert waited >= min(u.model_extra["total_latency"] for u in results) * 0.5  # the second waited for the first


def _health(server, want, within=30.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        load = httpx.get(server.base_url[:-len("/v1")] + "/health").json()
        if {k: load[k] for k in want} == want:
            return True
        time.sleep(0.05)
    return False


def _idle(server):
    """Wait until the server holds no request: a completion a client has read to its end stays
    in the engine until its next step drops it, and still counts against max_queue until then."""
    return _health(server, {"running": 0, "waiting": 0})


def _load(server):
    load = httpx.get(server.base_url[:-len("/v1")] + "/health").json()
    return {"running": load["running"], "waiting": load["waiting"]}


def _hang_up_while_queued(server):
    """One try: True when the queued request left while the first still decoded, None when the
    first ended too soon to tell (a busy machine), False when the queued request stayed."""
    headers = {"Authorization": "Bearer " + KEY}
    # ignore_eos: the first decodes to max_tokens (a sampled completion may end early); the
    # second asks for one token, so were it ever admitted it would end at once: a request seen
    # running is the first
    first_body = {"model": server.model, "messages": [{"role": "user", "content": "x"}], "max_tokens": 480,
                  "stream": True, "ignore_eos": True}
    second_body = dict(first_body, max_tokens=1)
    with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as first, \
            httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as second:
        with first.stream("POST", "/chat/completions", json=first_body) as decoding:
            assert decoding.status_code == 200
            with second.stream("POST", "/chat/completions", json=second_body) as waiting:
                assert waiting.status_code == 200
                if _load(server)["waiting"] != 1:
                    return None  # the first had already ended: the second was not kept waiting
            # the second client hung up before its first token: the server drops it from the queue
            deadline = time.monotonic() + 30
            load = _load(server)
            while load["waiting"] == 1 and time.monotonic() < deadline:
                time.sleep(0.05)
                load = _load(server)
            if load == {"running": 1, "waiting": 0}:
                return True
            return None if load == {"running": 0, "waiting": 0} else False


@pytest.mark.timing
def test_a_client_that_hangs_up_while_queued_leaves_the_queue(sequential):
    # The first request must still be decoding when the second is queued and hangs up; 480 tokens
    # take about 1.5 s on an idle machine, so a busy one may end it first: then try again.
    outcomes = []
    for _ in range(5):
        assert _idle(sequential)
        outcomes.append(_hang_up_while_queued(sequential))
        if outcomes[-1] is not None:
            break
    assert outcomes[-1] is True, "queued request left the queue: {} (None: the first ended too soon)".format(outcomes)
    assert _idle(sequential)


# -- stopping (last: these end the file's servers) ------------------------------------------------


@pytest.mark.timing
def test_sigint_ends_the_streams_in_flight_and_the_server(sequential):
    client, seen, ended = _client(sequential, key=KEY), threading.Event(), []

    def stream():
        try:
            for _ in client.chat.completions.create(model=sequential.model, max_tokens=400, stream=True,
                                                    **_chat("go on")):
                seen.set()
            ended.append("finished")
        except Exception as error:  # a stream cut short is what a client sees of a stopped server
            ended.append(type(error).__name__)

    thread = threading.Thread(target=stream)
    thread.start()
    assert seen.wait(30)
    os.kill(sequential.pid, signal.SIGINT)
    thread.join(15)
    assert ended and not thread.is_alive()
    assert sequential.process.wait(15) == 0
    assert gone(sequential.pid, sequential.port)


def test_leaving_the_block_by_keyboard_interrupt_stops_the_server(batched):
    assert listening(batched.port) and batched.alive
    with pytest.raises(KeyboardInterrupt):
        with batched:
            raise KeyboardInterrupt
    assert not batched.alive and batched.returncode == 0
    assert gone(batched.pid, batched.port)
