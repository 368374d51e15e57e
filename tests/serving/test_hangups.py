"""A server logs like a server: a client that hangs up (a load generator closing its keep-alive
connections, a stream dropped half-way) is one line in the verbose log and never a traceback; and a
server without authentication is measured with no ALCF token anywhere (real stand-in, real OpenAI client)."""

from __future__ import annotations

import socket
import struct
import time

import pytest

openai = pytest.importorskip("openai")
serving = pytest.importorskip("labkit.serving")

from labkit.testbeds.sambanova import inference  # noqa: E402
from labkit.testbeds.sambanova.inference import access, client  # noqa: E402


@pytest.fixture(scope="module")
def verbose():
    with serving.start_server(config="batched", model_size="tiny", verbose=True) as server:
        yield server


def _hang_up(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0), as a load generator dropping a keep-alive connection does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _log_shows(server, text: str, count: int, within: float = 60.0) -> str:
    deadline = time.monotonic() + within
    while server.log().count(text) < count:
        assert time.monotonic() < deadline, "{} x {!r} not in the log:\n{}".format(count, text, server.log())
        time.sleep(0.05)
    return server.log()


@pytest.mark.timing
def test_clients_that_hang_up_are_one_line_each_and_no_traceback(verbose):
    host, port = "127.0.0.1", verbose.port
    for _ in range(3):  # a keep-alive connection dropped between requests
        sock = socket.create_connection((host, port))
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        _hang_up(sock)
    sock = socket.create_connection((host, port))  # dropped half-way through a request
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Le")
    _hang_up(sock)
    # a real client dropping a stream after its first chunk
    sdk = openai.OpenAI(base_url=verbose.base_url, api_key=access.NO_KEY, max_retries=0)
    stream = sdk.chat.completions.create(model=verbose.model, messages=[{"role": "user", "content": "Hello"}],
                                         max_tokens=400, stream=True, extra_body={"ignore_eos": True})
    next(iter(stream))
    stream.close()
    sdk.close()
    log = _log_shows(verbose, "hung up", 4)
    assert "Traceback" not in log, log
    lines = [line for line in log.splitlines() if "hung up" in line]
    assert all(line.startswith("client 127.0.0.1:") for line in lines), lines
    # and the server still serves
    sock = socket.create_connection((host, port))
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    sock.close()


def test_a_server_without_authentication_needs_no_token_and_gets_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no inference_auth_token.py here
    monkeypatch.delenv("ALCF_ACCESS_TOKEN", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("LABKIT_PROGRESS", "off")
    with serving.start_server(config="batched", model_size="tiny") as server:
        config = inference.SPEC.from_notebook(dict(
            inference.SPEC.defaults(), endpoint_names=["mine"], base_urls=[server.base_url], models=[server.model],
            num_prompts=2, max_tokens=4, concurrency=[1], repeats=1, warmup_requests=0))
        run = inference.run_exercise(config)
    assert run.status == "complete" and run.metrics["requests_failed"] == 0
    assert run.environment["endpoints"][0]["token_from"].startswith("no key")


def test_the_alcf_token_is_sent_to_alcf_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    key = "alcf-secret"
    monkeypatch.setenv("ALCF_ACCESS_TOKEN", key)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert access.key_for("https://inference-api.alcf.anl.gov/resource_server/metis/api/v1").reveal() == key
    assert access.key_for("https://alcf.anl.gov.example.com/v1").reveal() == access.NO_KEY
    with serving.start_server(config="sequential", model_size="tiny", api_key=key) as server:
        endpoint = client.Endpoint("other", server.base_url, server.model, access.key_for(server.base_url))
        traces, _ = client.run_batch(endpoint, [(0, "Hello")], concurrency=1, options=client.Options(max_tokens=2))
        assert traces[0].status == "401"  # the server asks for a key; the ALCF token was not sent to it
        monkeypatch.setenv("OPENAI_API_KEY", key)  # a vLLM started with --api-key: the SDK's own variable
        endpoint = client.Endpoint("other", server.base_url, server.model, access.key_for(server.base_url))
        traces, _ = client.run_batch(endpoint, [(0, "Hello")], concurrency=1, options=client.Options(max_tokens=2))
        assert traces[0].status == "ok", traces[0].error

