"""Measuring: warm-up, then every endpoint at every load, repeated, the endpoints taking turns inside
each repeat and load so a slow drift of the machine or the service falls on all alike. Warm-up
requests are kept apart (``Measured.warmup``); an interrupt ends the batch in flight and keeps the
batches measured before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from labkit import interrupts, progress
from labkit.testbeds.sambanova.inference.client import MAX_THREADS, Endpoint, Options, open_client, run_batch
from labkit.testbeds.sambanova.inference.prompts import encode
from labkit.testbeds.sambanova.inference.report import load_label
from labkit.testbeds.sambanova.inference.timing import Trace, summarize

__all__ = ["Batch", "Measured", "measure", "summarize_batches", "count_tokens", "local_tokenizer", "Load",
           "KNEE_GAIN", "RUNAWAY"]

#: A knee search stops raising the load once goodput rose by less than this fraction over the best so far.
KNEE_GAIN = 0.05
#: ... or once median TTFT is this many times the lowest load's (latency runs away: queueing).
RUNAWAY = 10.0


@dataclass(frozen=True)
class Load:
    """How a batch is sent: ``concurrency`` requests in flight, or ``rate`` requests/s (Poisson or
    gamma with ``burstiness``) with at most ``concurrency`` in flight."""

    concurrency: int
    rate: Optional[float] = None
    burstiness: float = 1.0

    def doubled(self) -> "Load":
        if self.rate is not None:
            return Load(self.concurrency, self.rate * 2, self.burstiness)
        return Load(self.concurrency * 2)


@dataclass
class Batch:
    """One endpoint at one concurrency level in one repeat."""

    endpoint: str
    concurrency: int
    repeat: int
    traces: List[Trace]
    duration: float
    figures: Dict[str, Any] = field(default_factory=dict)
    rate: Optional[float] = None  # requests/s under a request rate (concurrency is then the cap)


@dataclass
class Measured:
    batches: List[Batch] = field(default_factory=list)
    warmup: List[Trace] = field(default_factory=list)
    stopped: str = ""
    knees: Dict[str, Dict[str, Any]] = field(default_factory=dict)  # per endpoint, from a knee search
    readiness: List[str] = field(default_factory=list)  # what the readiness check said of renamed models

    @property
    def traces(self) -> List[Trace]:
        return [t for b in self.batches for t in b.traces]

    @property
    def any_ended(self) -> bool:
        """Whether a request ended (answered or failed) before an interrupt: one cut short is not a figure."""
        return any(t.status != "interrupted" for t in self.traces)


def local_tokenizer(model: str) -> Any:
    """The model's tokenizer from the local Hugging Face cache (``transformers.AutoTokenizer``,
    ``local_files_only``: never a download in the middle of a measurement), or None."""
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(model, local_files_only=True)
    except Exception:  # noqa: BLE001 - not cached, no transformers: fall back to counting chunks
        return None


def count_tokens(traces: Sequence[Trace], tokenizers: Mapping[str, Any]) -> None:
    """Fill ``output_tokens`` where the server's usage gave none: the endpoint's tokenizer when there is one
    (a transformers tokenizer or a ``tokenizers.Tokenizer``), else one token per streamed chunk (an
    estimate: a chunk may hold several tokens), and say which; the same for reasoning and answer
    tokens where usage gave no ``completion_tokens_details.reasoning_tokens``."""
    for trace in traces:
        tokenizer = tokenizers.get(trace.endpoint)
        _split_reasoning(trace, tokenizer)
        if trace.output_tokens is not None or not trace.chunk_times:
            continue
        if tokenizer is not None:
            trace.output_tokens = len(encode(tokenizer, trace.text))
            trace.token_source = "tokenizer"
        else:
            trace.output_tokens = len(trace.chunk_times)
            trace.token_source = "chunks"


def _split_reasoning(trace: Trace, tokenizer: Any) -> None:
    if trace.reasoning_tokens is not None or not trace.chunk_times:
        return
    if tokenizer is not None:
        reasoning = len(encode(tokenizer, trace.reasoning_text)) if trace.reasoning_text else 0
        answer = len(encode(tokenizer, trace.text)) if trace.text else 0
    else:
        reasoning, answer = len(trace.chunk_times) - len(trace.answer_times), len(trace.answer_times)
    if trace.output_tokens is not None and (reasoning + answer) and trace.output_tokens != reasoning + answer:
        # usage's total is exact; share it out in the counted proportion
        reasoning = round(trace.output_tokens * reasoning / (reasoning + answer))
        answer = trace.output_tokens - reasoning
    trace.reasoning_tokens, trace.answer_tokens = reasoning, answer


def _texts(prompts: Sequence[Any]) -> List[Tuple[Any, ...]]:
    """(index, text) or (index, text, max_tokens) per prompt (a str, or a (text, max_tokens) pair)."""
    return [(k, p) if isinstance(p, str) else (k,) + tuple(p) for k, p in enumerate(prompts)]


def measure(endpoints: Sequence[Endpoint], prompts: Sequence[str], levels: Sequence[int], repeats: int,
            warmup: int, options: Options, targets: Optional[Mapping[str, float]] = None,
            show_progress: bool = True, rates: Sequence[float] = (), cap: Optional[int] = None,
            burstiness: float = 1.0, seed: int = 0, knee: Optional[Mapping[str, float]] = None,
            into: Optional[Measured] = None) -> Measured:
    """Measure every endpoint (see the module docstring); never raises for a failed request.

    ``rates``: request rates instead of concurrency ``levels`` (``cap`` requests in flight at most);
    ``knee``: {"max_requests": n, "max_s": s}: a knee search (:func:`_knee_search`) instead of the
    fixed levels and repeats. ``into``: the caller's Measured, so an interrupt still finds the batches."""
    measured = Measured() if into is None else into
    clients = {e.name: open_client(e, options) for e in endpoints}
    indexed = _texts(prompts)
    loads = ([Load(cap or MAX_THREADS, rate, burstiness) for rate in rates] if rates else
             [Load(level) for level in levels])
    total = len(endpoints) * (warmup + len(prompts) * len(loads) * repeats) if knee is None else \
        len(endpoints) * (warmup + int(knee["max_requests"]))
    steps = [(r, load, e) for r in range(repeats) for load in loads for e in endpoints]
    bar = None
    try:
        with interrupts.graceful() as stop:
            # The bar appears once an interrupt is caught: stopping the run the moment it shows
            # gives the run back (interrupted at batch 1), never a bare KeyboardInterrupt.
            stop.phase("warm-up", check=False)
            bar = progress.bar(total=total, desc="requests", unit="req") if show_progress else None
            tick: Callable[[Trace], None] = (lambda trace: bar.update(1)) if bar is not None else (lambda trace: None)
            try:
                for endpoint in endpoints:
                    for k in range(warmup):
                        if stop.requested:
                            break
                        batch, _ = run_batch(endpoint, [indexed[k % len(indexed)]], 1, options, repeat=-1,
                                             sdk=clients[endpoint.name], should_stop=lambda: stop.requested,
                                             on_done=tick)
                        measured.warmup.extend(batch)

                def send(endpoint: Endpoint, load: Load, repeat: int, batch_prompts: Sequence[Any]) -> Batch:
                    traces, duration = run_batch(endpoint, batch_prompts, load.concurrency, options, repeat=repeat,
                                                 sdk=clients[endpoint.name],
                                                 should_stop=lambda: stop.requested, on_done=tick, rate=load.rate,
                                                 burstiness=load.burstiness, seed=seed + repeat)
                    batch = Batch(endpoint.name, load.concurrency, repeat, traces, duration, rate=load.rate)
                    measured.batches.append(batch)
                    return batch

                stop.phase("requests", check=False)
                if knee is not None:
                    _knee_search(endpoints, loads[0], indexed, send, knee, targets, measured, lambda: stop.requested)
                    if stop.requested:
                        measured.stopped = "stopped by an interrupt during the knee search"
                for number, (repeat, load, endpoint) in enumerate(steps if knee is None else [], 1):
                    if not stop.requested:  # requested before batch 1: during the warm-up
                        send(endpoint, load, repeat, indexed)
                    if stop.requested:
                        measured.stopped = stop.where(step=number, steps=len(steps), unit="batch")
                        break
                stop.phase("summary", check=False)  # the bar's last frame (100%) is drawn as it closes
            except KeyboardInterrupt as exc:  # a second interrupt: keep what was measured
                if not stop.interrupted_by(exc):
                    raise
                measured.stopped = measured.stopped or "interrupted at once (a second interrupt)"
    finally:
        if bar is not None:
            bar.close()
        for sdk in clients.values():
            sdk.close()
    stop.phase("summary", check=False)  # also after a second interrupt
    summarize_batches(measured, endpoints, targets)
    if measured.stopped and measured.any_ended:  # else: nothing measured
        print(measured.stopped)
    return measured


def summarize_batches(measured: Measured, endpoints: Sequence[Endpoint],
                      targets: Optional[Mapping[str, float]] = None) -> None:
    """Output tokens counted and each batch's figures, from its traces (again: it may have been cut short)."""
    tokenizers: Dict[str, Any] = {}
    for endpoint in endpoints:  # a server that gave no usage: the model's tokenizer, if it is cached here
        if any(t.output_tokens is None and t.chunk_times and t.endpoint == endpoint.name for t in measured.traces):
            tokenizers[endpoint.name] = local_tokenizer(endpoint.model)
    count_tokens(measured.traces + measured.warmup, tokenizers)
    for batch in measured.batches:
        batch.figures = summarize(batch.traces, batch.duration, targets)


def _knee_search(endpoints: Sequence[Endpoint], first: Load, prompts: Sequence[Tuple[Any, ...]],
                 send: Callable[[Endpoint, Load, int, Sequence[Any]], Batch], budget: Mapping[str, float],
                 targets: Optional[Mapping[str, float]], measured: Measured, stopped: Callable[[], bool]) -> None:
    """Raise the load (doubling) on every endpoint still searching, the endpoints taking turns at each
    load, until its goodput stops rising (less than KNEE_GAIN over its best), its median TTFT runs away
    (RUNAWAY times its lowest load's), every request fails, or its budget of requests or seconds is
    spent; its knee is the load of its highest goodput. GuideLLM's sweep and vLLM's serve_sla search
    the same way; this one is bounded for a notebook."""
    state = {e.name: {"spent": 0, "seconds": 0.0, "best": None, "first_ttft": None, "why": ""} for e in endpoints}
    load = first
    while not stopped():
        searching = [e for e in endpoints if not state[e.name]["why"]]
        if not searching:
            break
        # each level sends at least a few requests per request in flight, so the server reaches a steady state
        count = min(max(len(prompts), 2 * (load.concurrency if load.rate is None else 1)),
                    int(budget["max_requests"]))
        batch_prompts = [prompts[k % len(prompts)] for k in range(count)]
        words = load_label({"request_rate": load.rate, "concurrency": load.concurrency})
        for endpoint in searching:
            mine = state[endpoint.name]
            if mine["spent"] + count > budget["max_requests"] or mine["seconds"] >= budget["max_s"]:
                mine["why"] = "its budget ({} requests, {:g} s) would be spent".format(
                    int(budget["max_requests"]), budget["max_s"])
                continue
            began = time.perf_counter()
            batch = send(endpoint, load, 0, batch_prompts)
            mine["seconds"] += time.perf_counter() - began
            mine["spent"] += len(batch.traces)
            batch.figures = summarize(batch.traces, batch.duration, targets)
            goodput, ttft = batch.figures["goodput"], batch.figures["ttft_median_s"]
            if not batch.figures["completed"]:
                mine["why"] = "every request failed at {}".format(words)
                continue
            if mine["first_ttft"] is None:
                mine["first_ttft"] = ttft
            best = mine["best"]
            if best is None or goodput > best[1]:
                mine["best"] = (load, goodput)
            if best is not None and goodput < best[1] * (1 + KNEE_GAIN):
                mine["why"] = "goodput stopped rising at {} ({:.3g} requests/s, best {:.3g})".format(
                    words, goodput, max(best[1], goodput))
            elif ttft > RUNAWAY * mine["first_ttft"]:
                mine["why"] = "median TTFT ran away at {} ({:.3g} times the lowest load's)".format(
                    words, ttft / mine["first_ttft"])
            elif (load.rate is None and load.concurrency >= MAX_THREADS) or (load.rate or 0) >= 1000:
                mine["why"] = "the highest load labkit sends was reached"
        load = load.doubled()
    for endpoint in endpoints:
        mine = state[endpoint.name]
        best = mine["best"]
        measured.knees[endpoint.name] = {
            "load": best[0].rate if best and best[0].rate is not None else (best[0].concurrency if best else None),
            "kind": "request_rate" if first.rate is not None else "concurrency",
            "goodput": best[1] if best else float("nan"), "requests": mine["spent"], "seconds": mine["seconds"],
            "stopped": mine["why"] or "interrupted"}
