"""Measuring: warm-up, then every endpoint at every concurrency level, repeated, interleaved.

    from labkit.testbeds.sambanova.inference.measure import measure
    measured = measure(endpoints, prompts, levels=[1, 4], repeats=3, warmup=1, options=Options(...))
    measured.batches        # one per (repeat, level, endpoint): its traces, duration and figures
    measured.stopped        # "" or where an interrupt stopped it

Endpoints take turns inside each repeat and level (repeat 1: level 1 on A then B, level 4 on A then
B; repeat 2: ...), so a slow drift of the machine or the service falls on both alike. Warm-up
requests (the first prompts, one at a time) go to each endpoint before anything is measured and
are kept apart (``measured.warmup``), never in a figure. An interrupt ends the batch in flight
(requests waiting are not sent, those streaming are closed and marked "interrupted") and keeps
every batch measured before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from labkit import interrupts, progress
from labkit.testbeds.sambanova.inference.client import Cancel, Endpoint, Options, open_client, run_batch
from labkit.testbeds.sambanova.inference.timing import Trace, summarize

__all__ = ["Batch", "Measured", "measure", "count_tokens", "local_tokenizer"]


@dataclass
class Batch:
    """One endpoint at one concurrency level in one repeat."""

    endpoint: str
    concurrency: int
    repeat: int
    traces: List[Trace]
    duration: float
    figures: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Measured:
    batches: List[Batch] = field(default_factory=list)
    warmup: List[Trace] = field(default_factory=list)
    stopped: str = ""

    @property
    def traces(self) -> List[Trace]:
        return [t for b in self.batches for t in b.traces]


def local_tokenizer(model: str) -> Any:
    """The model's tokenizer from the local Hugging Face cache (``transformers.AutoTokenizer``,
    ``local_files_only``: never a download in the middle of a measurement), or None."""
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(model, local_files_only=True)
    except Exception:  # noqa: BLE001 - not cached, no transformers: fall back to counting chunks
        return None


def _token_count(tokenizer: Any, text: str) -> int:
    encoded = tokenizer.encode(text, add_special_tokens=False)
    return len(getattr(encoded, "ids", encoded))  # a ``tokenizers.Tokenizer`` gives an Encoding, transformers a list


def count_tokens(traces: Sequence[Trace], tokenizers: Mapping[str, Any]) -> None:
    """Fill ``output_tokens`` where the server's usage gave none: the endpoint's tokenizer when there is one
    (a transformers tokenizer or a ``tokenizers.Tokenizer``), else one token per streamed chunk (an
    estimate: a chunk may hold several tokens), and say which."""
    for trace in traces:
        if trace.output_tokens is not None or not trace.chunk_times:
            continue
        tokenizer = tokenizers.get(trace.endpoint)
        if tokenizer is not None:
            trace.output_tokens = _token_count(tokenizer, trace.text)
            trace.token_source = "tokenizer"
        else:
            trace.output_tokens = len(trace.chunk_times)
            trace.token_source = "chunks"


def measure(endpoints: Sequence[Endpoint], prompts: Sequence[str], levels: Sequence[int], repeats: int,
            warmup: int, options: Options, targets: Optional[Mapping[str, float]] = None,
            tokenizers: Optional[Mapping[str, Any]] = None,
            show_progress: bool = True) -> Measured:
    """Measure every endpoint (see the module docstring); never raises for a failed request."""
    measured = Measured()
    clients = {e.name: open_client(e, options) for e in endpoints}
    indexed = list(enumerate(prompts))
    total = len(endpoints) * (warmup + len(prompts) * len(levels) * repeats)
    steps = [(r, level, e) for r in range(repeats) for level in levels for e in endpoints]
    bar = None
    try:
        with interrupts.graceful() as stop:
            # The bar appears once an interrupt is caught: stopping the run the moment it shows
            # gives the run back (interrupted at batch 1), never a bare KeyboardInterrupt.
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
                for number, (repeat, level, endpoint) in enumerate(steps, 1):
                    if stop.requested:
                        measured.stopped = interrupts.where(step=number, steps=len(steps), unit="batch")
                        break
                    cancel = Cancel()
                    traces, duration = run_batch(endpoint, indexed, level, options, repeat=repeat, cancel=cancel,
                                                 sdk=clients[endpoint.name], should_stop=lambda: stop.requested,
                                                 on_done=tick)
                    measured.batches.append(Batch(endpoint.name, level, repeat, traces, duration))
                    if stop.requested:
                        measured.stopped = interrupts.where(step=number, steps=len(steps), unit="batch")
                        break
            except KeyboardInterrupt as exc:  # a second interrupt: keep what was measured
                if not stop.interrupted_by(exc):
                    raise
                measured.stopped = measured.stopped or "interrupted at once (a second interrupt)"
    finally:
        if bar is not None:
            bar.close()
        for sdk in clients.values():
            sdk.close()
    tokenizers = dict(tokenizers or {})
    for endpoint in endpoints:  # a server that gave no usage: the model's tokenizer, if it is cached here
        if endpoint.name not in tokenizers and any(t.output_tokens is None and t.chunk_times and
                                                   t.endpoint == endpoint.name for t in measured.traces):
            tokenizers[endpoint.name] = local_tokenizer(endpoint.model)
    count_tokens(measured.traces + measured.warmup, tokenizers)
    for batch in measured.batches:
        batch.figures = summarize(batch.traces, batch.duration, targets)
    if measured.stopped:
        print(measured.stopped)
    return measured
