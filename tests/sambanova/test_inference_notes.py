"""The honest notes, and output tokens counted by a tokenizer when a server sends no usage."""

import math

import pytest

from labkit.testbeds.sambanova.inference.access import Secret
from labkit.testbeds.sambanova.inference.client import Endpoint
from labkit.testbeds.sambanova.inference.measure import Batch, count_tokens
from labkit.testbeds.sambanova.inference.report import comparison_notes
from labkit.testbeds.sambanova.inference.spec import weights_of
from labkit.testbeds.sambanova.inference.timing import Trace, configuration_rows, summarize

METIS = Endpoint("Metis", "https://inference-api.alcf.anl.gov/resource_server/metis/api/v1", "gpt-oss-120b-131072",
                 Secret("x"), "SambaNova SN40L (Metis), SambaStack")
SOPHIA = Endpoint("Sophia", "https://inference-api.alcf.anl.gov/resource_server/sophia/vllm/v1", "openai/gpt-oss-120b",
                  Secret("x"), "vLLM on Sophia (NVIDIA A100 GPUs)")
LLAMA = Endpoint("Llama", METIS.base_url, "Llama-4-Maverick-17B-128E-Instruct", Secret("x"), METIS.what)


def batches(name, ttfts_by_repeat, tokens):
    """Batches of 3 requests per repeat, each request's TTFT given, 1 s of decoding after it."""
    found = []
    for repeat, ttft in enumerate(ttfts_by_repeat):
        traces = [Trace(endpoint=name, concurrency=1, repeat=repeat, index=i, start=0.0,
                        chunk_times=[ttft + 0.01 * i + k * (1.0 / tokens) for k in range(tokens)],
                        output_tokens=tokens, token_source="server usage") for i in range(3)]
        found.append(Batch(name, 1, repeat, traces, 3.5, summarize(traces, 3.5, {"ttft": 1.0})))
    return found


def notes_for(endpoints, *groups):
    rows = configuration_rows([b for g in groups for b in g])
    return rows, comparison_notes(endpoints, rows, [], 1, ["server usage"])


def test_the_same_weights_served_differently_are_named_so():
    assert weights_of("openai/gpt-oss-120b") == weights_of("gpt-oss-120b-131072") == "gpt-oss-120b"
    _, notes = notes_for([METIS, SOPHIA], batches("Metis", [0.2, 0.21, 0.19], 8), batches("Sophia", [0.3, 0.31, 0.29], 8))
    assert any("the same weights (gpt-oss-120b) served differently" in n for n in notes)
    assert not any("different models" in n for n in notes)


def test_different_models_are_named_so_and_unequal_lengths_are_compared_per_token():
    _, notes = notes_for([METIS, LLAMA], batches("Metis", [0.2, 0.21, 0.19], 12), batches("Llama", [0.2, 0.2, 0.2], 8))
    assert any("these are different models" in n for n in notes)
    assert any("Output tokens per request differ (Metis 12.0, Llama 8.0): compare time per output token" in n
               for n in notes)


def test_overlapping_intervals_are_inside_the_noise_and_separate_ones_are_not():
    rows, notes = notes_for([METIS, SOPHIA], batches("Metis", [0.20, 0.30, 0.25], 8),
                            batches("Sophia", [0.22, 0.32, 0.27], 8))
    assert rows[0]["ttft_median_s_ci"][0] < rows[1]["ttft_median_s"] < rows[0]["ttft_median_s_ci"][1]
    assert any("median TTFT" in n and "inside the noise" in n for n in notes)
    _, notes = notes_for([METIS, SOPHIA], batches("Metis", [0.200, 0.201, 0.199], 8),
                         batches("Sophia", [0.600, 0.601, 0.599], 8))
    verdict = next(n for n in notes if n.startswith("Concurrency 1, Metis against Sophia"))
    assert "median TTFT" in verdict.split("differ beyond the noise")[0].split(";")[-1]


def test_one_repeat_gives_no_interval_and_no_verdict():
    rows, notes = notes_for([METIS, SOPHIA], batches("Metis", [0.2], 8), batches("Sophia", [0.3], 8))
    assert all(math.isnan(x) for x in rows[0]["ttft_median_s_ci"])
    assert any("one repeat, so no interval and no verdict on noise" in n for n in notes)


def test_without_usage_the_tokens_come_from_a_tokenizer_else_from_chunks():
    pytest.importorskip("tokenizers")
    from labkit.llm.tokenizer import train_tokenizer

    tokenizer = train_tokenizer(["the cache holds keys and values", "tokens arrive one at a time"] * 20, 300)
    a = Trace(endpoint="with", chunk_times=[1.0, 2.0], text="the cache holds keys")
    b = Trace(endpoint="without", chunk_times=[1.0, 2.0, 3.0], text="tokens arrive")
    count_tokens([a, b], {"with": tokenizer})
    assert a.token_source == "tokenizer" and a.output_tokens == len(tokenizer.encode("the cache holds keys",
                                                                                        add_special_tokens=False).ids)
    assert b.token_source == "chunks" and b.output_tokens == 3


def test_a_run_interrupted_before_its_first_configuration_plots_without_a_warning():
    import matplotlib

    matplotlib.use("Agg")
    from labkit.results import Run
    from labkit.testbeds.sambanova.inference import report

    run = Run("sambanova/inference", status="interrupted")
    run.details = {"rows": []}
    report.plot_latency(run)  # pytest turns matplotlib's "No artists with labels" warning into an error
