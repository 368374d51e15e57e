"""labkit's metric code on a recorded trace, against vLLM's definitions computed here independently.

The reference follows vllm/benchmarks/serve.py (calculate_metrics) and the chat request function of
vllm/benchmarks/lib/endpoint_request_func.py: ttft = first token chunk - send; itl = gaps between
token chunks; latency = last token chunk - send; tpot = (latency - ttft) / (output_len - 1) for
output_len > 1; goodput counts requests meeting every SLO (tpot 0 when output_len <= 1);
throughputs divide by the benchmark's duration; percentiles are numpy's (linear).
"""

import numpy as np
import pytest

from labkit.testbeds.sambanova.inference.timing import Trace, summarize

# A recorded trace: perf_counter() seconds at the send and at each chunk with text, per request
# (four requests at concurrency 2 against the stand-in, rounded), their usage counts, and one 429.
RECORDED = [
    (10.000, [10.210, 10.330, 10.452, 10.571, 10.700], 5),
    (10.001, [10.395, 10.540, 10.668, 10.790], 5),   # a chunk held two tokens: 4 chunks, 5 tokens
    (10.702, [10.815, 10.930, 11.051], 3),
    (10.791, [11.502], 1),                            # one token: no TPOT, 0 for goodput
]
DURATION = 11.6 - 10.0
TARGETS = {"ttft": 0.3, "tpot": 0.13}


def _traces():
    traces = [Trace(endpoint="a", concurrency=2, index=i, start=s, chunk_times=list(c), output_tokens=n,
                    token_source="server usage") for i, (s, c, n) in enumerate(RECORDED)]
    traces.append(Trace(endpoint="a", concurrency=2, index=4, start=10.8, status="429", http_status=429))
    return traces


def _vllm_reference():
    ttfts, tpots, all_tpots, itls, e2els, lens = [], [], [], [], [], []
    for start, chunks, n in RECORDED:
        ttft = chunks[0] - start
        latency = chunks[-1] - start
        itls += list(np.diff(chunks))
        tpot = 0.0
        if n > 1:
            tpot = (latency - ttft) / (n - 1)
            tpots.append(tpot)
        all_tpots.append(tpot)
        ttfts.append(ttft)
        e2els.append(latency)
        lens.append(n)
    good = sum(1 for t, p in zip(ttfts, all_tpots) if TARGETS["ttft"] >= t and TARGETS["tpot"] >= p)
    return {"ttft": ttfts, "tpot": tpots, "itl": itls, "e2el": e2els, "completed": len(RECORDED),
            "total_output": sum(lens), "good": good}


def test_the_recorded_trace_gives_vllms_figures():
    ref = _vllm_reference()
    figures = summarize(_traces(), DURATION, TARGETS)
    assert figures["requests"] == 5 and figures["completed"] == 4 and figures["failed"] == 1
    assert figures["failed_by_status"] == {"429": 1}  # counted, never dropped
    assert figures["output_tokens"] == ref["total_output"] == 14
    assert figures["request_throughput"] == pytest.approx(ref["completed"] / DURATION)
    assert figures["output_throughput"] == pytest.approx(ref["total_output"] / DURATION)
    assert figures["good"] == ref["good"] and figures["goodput"] == pytest.approx(ref["good"] / DURATION)
    for name in ("ttft", "tpot", "itl", "e2el"):
        values = ref[name]
        assert figures[name + "_mean_s"] == pytest.approx(np.mean(values)), name
        assert figures[name + "_median_s"] == pytest.approx(np.median(values)), name
        assert figures[name + "_p90_s"] == pytest.approx(np.percentile(values, 90)), name
        assert figures[name + "_p99_s"] == pytest.approx(np.percentile(values, 99)), name
    assert len(ref["tpot"]) == 3  # the one-token request has no TPOT


def test_per_request_figures_and_a_failed_request_has_none():
    first, *_rest, failed = _traces()
    assert first.ttft == pytest.approx(0.210) and first.e2el == pytest.approx(0.700)
    assert first.tpot == pytest.approx((0.700 - 0.210) / 4)
    assert first.itl == pytest.approx([0.120, 0.122, 0.119, 0.129])
    assert failed.ttft is None and failed.e2el is None and failed.itl == [] and failed.tpot is None


def test_without_targets_goodput_is_not_a_number():
    figures = summarize(_traces(), DURATION, None)
    assert figures["good"] is None and np.isnan(figures["goodput"])
