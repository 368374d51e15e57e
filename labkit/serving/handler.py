"""The HTTP side of the local server: the standard library's threading HTTP server, HTTP/1.1 with
keep-alive, streams as server-sent events in chunked encoding. Routes: docs/serving.md, "The API";
anything else is a 404 with an OpenAI error body, so a wrong base URL fails as on the real services.
"""

from __future__ import annotations

import json
import queue
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

from labkit.serving.engine import Engine, EngineStopped, Generation, QueueFull
from labkit.serving.model import ChatModel
from labkit.serving.protocol import (ApiError, ChatRequest, apply_chat_template, chunk_body, completion_body,
                                     error_body, models_body, parse_chat_request, usage_body)

__all__ = ["ChatServer", "MAX_BODY_BYTES"]

#: The largest request body read (bigger ones get a 413).
MAX_BODY_BYTES = 4 * 1024 * 1024

#: The error of a request the engine failed (the model raised, or the server is stopping).
_FAILED = "The request failed in the server: {}"


class _TextStream:
    """Text of a growing list of token ids, given out in pieces that never split a character."""

    def __init__(self, model: ChatModel):
        self.model, self.ids, self.text = model, [], ""

    def add(self, token: int) -> str:
        self.ids.append(token)
        return self.finish(complete_only=True)

    def finish(self, complete_only: bool = False) -> str:
        text = self.model.decode(self.ids)
        if complete_only and text.endswith("\ufffd"):  # a character still incomplete: wait for the next token
            return ""
        piece, self.text = text[len(self.text):], text
        return piece


class _Answer:
    """One completion's text as a reasoning model gives it: its first ``reasoning`` tokens are
    reasoning, the rest the answer (``content``); ``add`` and ``finish`` give (field, piece) pairs."""

    def __init__(self, model: ChatModel, reasoning: int):
        self.reasoning, self.content, self.limit = _TextStream(model), _TextStream(model), reasoning

    def add(self, token: int) -> List[Tuple[str, str]]:
        if len(self.reasoning.ids) < self.limit:
            return [("reasoning", self.reasoning.add(token))]
        flushed = [("reasoning", self.reasoning.finish())] if not self.content.ids and self.limit else []
        return flushed + [("content", self.content.add(token))]

    def finish(self) -> List[Tuple[str, str]]:
        return [("reasoning", self.reasoning.finish()), ("content", self.content.finish())]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # streamed tokens are small writes: send each at once
    server: "ChatServer"

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    # -- plumbing ------------------------------------------------------------------------------

    def _send_json(self, status: int, body: Dict[str, Any], headers: Optional[Dict[str, str]] = None) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, error: ApiError) -> None:
        headers = {"Retry-After": "1"} if error.status == 429 else None
        self._send_json(error.status, error_body(error), headers)

    def _authorised(self) -> bool:
        key = self.server.api_key
        if key is None:
            return True
        given = self.headers.get("Authorization", "")
        if given == "Bearer " + key:
            return True
        self._send_error(ApiError(401, "Incorrect API key provided" if given else
                                  "No API key provided: send 'Authorization: Bearer <key>'",
                                  code="invalid_api_key"))
        return False

    def _next_event(self, gen: Generation):
        """The engine's next event for ``gen``; while none comes, a client that hung up cancels it."""
        while True:
            try:
                return gen.events.get(timeout=0.25)
            except queue.Empty:
                if self._client_gone():
                    self.server.engine.cancel(gen)  # frees its place in the queue or the batch
                    raise ConnectionResetError("the client closed the connection")

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _not_found(self) -> None:
        self._send_error(ApiError(404, "{} {}: no such route here (the routes are GET /v1/models and POST "
                                       "/v1/chat/completions, without a trailing slash)".format(self.command, self.path),
                                  code="not_found"))

    # -- routes --------------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/health":
            self._send_json(200, {"status": "ok", "model": self.server.model.name, "config": self.server.config,
                                  **self.server.engine.load()})
        elif path == "/v1/models" or path == "/v1/models/" + self.server.model.name:
            if self._authorised():
                body = models_body(self.server.model.name, self.server.created)
                self._send_json(200, body if path == "/v1/models" else body["data"][0])
        elif path.startswith("/v1/models/"):
            if self._authorised():
                self._send_error(ApiError(404, "The model `{}` does not exist".format(path[len("/v1/models/"):]),
                                          code="model_not_found"))
        else:
            self._not_found()

    def do_POST(self) -> None:
        arrival, arrival_wall = time.perf_counter(), time.time()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            self._send_error(ApiError(400, "Content-Length: {!r} is not a byte count".format(
                self.headers.get("Content-Length"))))
            return
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._send_error(ApiError(413, "The request body is {} bytes; at most {}".format(length, MAX_BODY_BYTES)))
            return
        raw = self.rfile.read(length)
        if self.path.split("?", 1)[0] != "/v1/chat/completions":
            self._not_found()
            return
        if not self._authorised():
            return
        try:
            request = parse_chat_request(raw, self.server.model.name)
            gen = self._generation(request, arrival, arrival_wall)
            self.server.engine.submit(gen)
        except ApiError as error:
            self._send_error(error)
            return
        except QueueFull as error:
            self._send_error(ApiError(429, str(error), type="rate_limit_exceeded", code="queue_full"))
            return
        except EngineStopped as error:
            self._send_error(ApiError(503, str(error), type="server_error"))
            return
        self.server.track(1)
        try:
            if request.stream:
                self._stream(request, gen)
            else:
                self._complete(request, gen)
        finally:
            self.server.track(-1)

    def _not_allowed(self) -> None:
        self.close_connection = True  # a body we did not read may follow
        self._send_error(ApiError(405, "{} {}: only GET (/v1/models) and POST (/v1/chat/completions) are "
                                       "served".format(self.command, self.path), code="method_not_allowed"))

    do_PUT = do_DELETE = do_PATCH = _not_allowed

    def _generation(self, request: ChatRequest, arrival: float, arrival_wall: float) -> Generation:
        model = self.server.model
        ids = model.encode(apply_chat_template(request.messages))
        if len(ids) + request.max_tokens > model.context_length:
            raise ApiError(400, "This model's maximum context length is {} tokens; the messages are {} tokens and "
                                "max_tokens is {}: ask for fewer".format(model.context_length, len(ids),
                                                                         request.max_tokens), param="max_tokens")
        return Generation(prompt_ids=ids, max_tokens=request.max_tokens, temperature=request.temperature,
                          top_p=request.top_p, seed=request.seed, ignore_eos=request.ignore_eos, arrival=arrival,
                          arrival_wall=arrival_wall)

    def _complete(self, request: ChatRequest, gen: Generation) -> None:
        text = _Answer(self.server.model, self.server.reasoning_tokens)
        while True:
            try:
                kind, value = self._next_event(gen)
            except ConnectionResetError:
                self.close_connection = True
                return
            if kind == "token":
                text.add(value)
            elif kind == "error":
                self._send_error(ApiError(500, _FAILED.format(value), type="server_error"))
                return
            else:
                text.finish()
                reasoning = (self.server.reasoning_field, text.reasoning.text) if text.limit else None
                self._send_json(200, completion_body(request, text.content.text, gen, self.server.config,
                                                     reasoning, text.limit))
                return

    def _write_event(self, body: Any) -> None:
        data = b"data: " + (body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")) + b"\n\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _stream(self, request: ChatRequest, gen: Generation) -> None:
        config = self.server.config
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        text = _Answer(self.server.model, self.server.reasoning_tokens)
        fields = {"reasoning": self.server.reasoning_field, "content": "content"}
        try:
            self._write_event(chunk_body(request, config, delta={"role": "assistant", "content": ""}))
            while True:
                kind, value = self._next_event(gen)
                if kind == "token":
                    for field, piece in text.add(value):
                        if piece:
                            self._write_event(chunk_body(request, config, delta={fields[field]: piece}))
                    continue
                if kind == "error":  # the status is sent already: the error goes in the stream, as OpenAI does
                    self._write_event(error_body(ApiError(500, _FAILED.format(value), type="server_error")))
                else:
                    for field, piece in text.finish():
                        if piece:
                            self._write_event(chunk_body(request, config, delta={fields[field]: piece}))
                    self._write_event(chunk_body(request, config, finish_reason=value))
                    if request.include_usage:
                        self._write_event(chunk_body(request, config, usage=usage_body(gen, text.limit)))
                self._write_event(b"[DONE]")
                self.wfile.write(b"0\r\n\r\n")
                return
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            self.server.engine.cancel(gen)  # the client went away: free its place in the batch
            self.close_connection = True


class ChatServer(ThreadingHTTPServer):
    """An HTTP server for one model and one engine (``config`` names the engine's scheduling)."""

    daemon_threads = True
    allow_reuse_address = False
    reasoning_tokens = 0  # > 0: answer as a reasoning model (the server's --reasoning-tokens)
    reasoning_field = "reasoning_content"
    request_queue_size = 128  # the listen backlog: 5 (the default) drops simultaneous connects, costing 1 s each

    def __init__(self, address, model: ChatModel, engine: Engine, config: str, api_key: Optional[str] = None,
                 verbose: bool = False):
        super().__init__(address, _Handler)
        self.model, self.engine, self.config, self.api_key, self.verbose = model, engine, config, api_key, verbose
        self.created = int(time.time())
        self.in_flight = 0
        self._count = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a load generator dropping keep-alive connections, a stream closed
        half-way) is no error of the server's: one line with --verbose, else nothing. Any other
        exception keeps socketserver's traceback."""
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, socket.timeout)):  # BrokenPipe, ConnectionReset, ConnectionAborted
            if self.verbose:
                sys.stderr.write("client {}:{} hung up ({})\n".format(client_address[0], client_address[1],
                                                                       type(error).__name__))
            return
        super().handle_error(request, client_address)

    def track(self, change: int) -> None:
        with self._count:
            self.in_flight += change

    def drain(self, timeout: float) -> bool:
        """Wait until no response is being written (each ended by the engine's stop); False on timeout."""
        deadline = time.monotonic() + timeout
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.02)
        return not self.in_flight

    @property
    def port(self) -> int:
        return int(self.server_address[1])
