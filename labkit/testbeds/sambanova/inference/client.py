"""The measuring client: chat completions streamed through the ``openai`` SDK, time stamps only
(figures come afterwards, :mod:`.timing`; docs/serving.md, "Speed", measures what it costs), sent as
docs/sambanova.md, "Load, workload, knee", says. The SDK retries nothing: a retry would hide a 429.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from labkit.serving.configs import REASONING_FIELDS
from labkit.testbeds.sambanova.inference.access import Secret, status_of
from labkit.testbeds.sambanova.inference.timing import OK, Trace

__all__ = ["Endpoint", "Options", "Cancel", "open_client", "stream_request", "run_batch", "arrival_times",
           "MAX_THREADS"]

#: The most requests in flight under a request rate with no cap (threads of the client).
MAX_THREADS = 256


@dataclass
class Endpoint:
    """One server to measure; ``what`` serves it, in words ("the stand-in, batched", "SambaNova SN40L (Metis)")."""

    name: str
    base_url: str
    model: str
    api_key: Secret = field(default_factory=lambda: Secret("none"), repr=False)
    what: str = ""
    local: bool = False
    served: Optional[List[str]] = None  # what GET /models listed (access.readiness), for a 404's sentence


@dataclass(frozen=True)
class Options:
    """What every request asks for."""

    max_tokens: int = 32
    temperature: float = 0.0
    seed: Optional[int] = 0
    timeout_s: float = 60.0
    ignore_eos: bool = False  # vLLM's extension (sent only when true): the answer runs to max_tokens


class Cancel:
    """Stops the requests of a batch: those waiting are never sent, those in flight are closed."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._open: Dict[int, Any] = {}
        self._lock = threading.Lock()

    def __call__(self) -> None:
        self.event.set()
        with self._lock:
            streams = list(self._open.values())
        for stream in streams:
            try:
                stream.close()  # the reading thread's next read fails, and it ends as "interrupted"
            except Exception:  # noqa: BLE001 - closing a stream that is ending anyway
                pass

    def opened(self, key: int, stream: Any) -> None:
        with self._lock:
            self._open[key] = stream
        if self.event.is_set():
            stream.close()

    def closed(self, key: int) -> None:
        with self._lock:
            self._open.pop(key, None)


def open_client(endpoint: Endpoint, options: Options) -> Any:
    """The SDK client of one endpoint (thread-safe; one connection pool shared by the batch)."""
    import openai

    return openai.OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key.reveal(), max_retries=0,
                         timeout=options.timeout_s)


def _reasoning(delta: Any) -> Optional[str]:
    return next(filter(None, (getattr(delta, name, None) for name in REASONING_FIELDS)), None)


def stream_request(sdk: Any, endpoint: Endpoint, prompt: str, options: Options, trace: Trace,
                   cancel: Optional[Cancel] = None, max_tokens: Optional[int] = None) -> Trace:
    """Send one chat completion, streamed, and fill ``trace`` (never raises for a failed request).
    ``max_tokens``: this request's own (a synthetic workload's output length), else the options'."""
    perf = time.perf_counter
    times, answer_times = trace.chunk_times, trace.answer_times
    texts: List[str] = []
    thoughts: List[str] = []
    usage = None
    key = id(trace)
    extra = {"extra_body": {"ignore_eos": True}} if options.ignore_eos else {}
    trace.start = perf()
    try:
        stream = sdk.chat.completions.create(
            model=endpoint.model, messages=[{"role": "user", "content": prompt}],
            max_tokens=max_tokens or options.max_tokens, temperature=options.temperature, seed=options.seed,
            stream=True, stream_options={"include_usage": True}, **extra)
        if cancel is not None:
            cancel.opened(key, stream)
        for chunk in stream:  # the hot path: a time stamp and the text, nothing else
            now = perf()
            choices = chunk.choices
            if choices:
                delta = choices[0].delta
                content = delta.content
                if content:  # a chunk with text: the role-only first chunk and the finish chunk carry none
                    times.append(now)
                    answer_times.append(now)
                    texts.append(content)
                else:
                    thought = _reasoning(delta)
                    if thought:
                        times.append(now)
                        thoughts.append(thought)
                if choices[0].finish_reason:
                    trace.finish_reason = choices[0].finish_reason
            if chunk.usage is not None:
                usage = chunk.usage
    except Exception as exc:  # noqa: BLE001 - every failure is a result with its status
        trace.status, trace.http_status = status_of(exc)
        if cancel is not None and cancel.event.is_set():
            trace.status = "interrupted"
        trace.error = "{}: {}".format(type(exc).__name__, exc)[:300]
    finally:
        if cancel is not None:
            cancel.closed(key)
    trace.text = "".join(texts)
    trace.reasoning_text = "".join(thoughts)
    if trace.status == OK and not times and trace.finish_reason != "length":
        trace.status, trace.error = "no tokens", "the stream ended without a chunk that carries text"
    if usage is not None:
        trace.usage = usage.model_dump() if hasattr(usage, "model_dump") else dict(usage)
        trace.output_tokens = trace.usage.get("completion_tokens")
        if trace.output_tokens is not None:
            trace.token_source = "server usage"
            details = trace.usage.get("completion_tokens_details") or {}
            reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
            if isinstance(reasoning, int):
                trace.reasoning_tokens = reasoning
                trace.answer_tokens = trace.output_tokens - reasoning
    return trace


def arrival_times(count: int, rate: float, burstiness: float = 1.0, seed: int = 0) -> List[float]:
    """When each of ``count`` requests is due, in seconds after the start: gaps drawn from a gamma
    distribution of mean 1/``rate`` and shape ``burstiness`` (1: exponential gaps, Poisson arrivals),
    the first request at 0."""
    draw = random.Random(seed)
    gaps = [draw.gammavariate(burstiness, 1.0 / (rate * burstiness)) for _ in range(count - 1)]
    return list(itertools.accumulate(gaps, initial=0.0))[:count]


def run_batch(endpoint: Endpoint, prompts: Sequence[Tuple[Any, ...]], concurrency: int, options: Options,
              repeat: int = 0, sdk: Any = None,
              should_stop: Callable[[], bool] = lambda: False,
              on_done: Callable[[Trace], None] = lambda trace: None, rate: Optional[float] = None,
              burstiness: float = 1.0, seed: int = 0) -> Tuple[List[Trace], float]:
    """Send ``prompts`` ((index, text) or (index, text, max_tokens)) with at most ``concurrency`` in flight,
    under a ``rate`` (requests/s) each at its arrival (:func:`arrival_times`); the traces of those sent
    and the batch's duration (first send to last end). When ``should_stop`` (polled) turns true, the
    requests not yet sent are dropped and those in flight closed (status "interrupted")."""
    cancel = Cancel()
    sdk = sdk if sdk is not None else open_client(endpoint, options)
    traces = [Trace(endpoint=endpoint.name, concurrency=concurrency, repeat=repeat, index=p[0]) for p in prompts]
    texts = [p[1] for p in prompts]
    lengths = [p[2] if len(p) > 2 else None for p in prompts]
    started = [False] * len(traces)
    due = arrival_times(len(traces), rate, burstiness, seed) if rate else None

    def one(k: int) -> Trace:
        if due is not None:
            traces[k].scheduled = due[k]
            # wait for the arrival; an interrupt (the cancel event) ends the wait at once
            if cancel.event.wait(max(0.0, begin + due[k] - time.perf_counter())):
                return traces[k]
        if cancel.event.is_set():
            return traces[k]
        started[k] = True
        if due is not None:
            traces[k].late = time.perf_counter() - begin - due[k]
        return stream_request(sdk, endpoint, texts[k], options, traces[k], cancel, lengths[k])

    begin = time.perf_counter()
    pool = futures.ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="labkit-request")
    try:
        pending = {pool.submit(one, k) for k in range(len(traces))}
        while pending:
            done, pending = futures.wait(pending, timeout=0.05, return_when=futures.FIRST_COMPLETED)
            for future in done:
                on_done(future.result())
            if pending and should_stop() and not cancel.event.is_set():
                cancel()
        duration = time.perf_counter() - begin  # vLLM's benchmark duration: first send to the last answer
    except BaseException:  # a second interrupt lands here: stop what is in flight, then let it through
        cancel()
        raise
    finally:
        pool.shutdown(wait=True)
    return [t for t, sent in zip(traces, started) if sent], duration
