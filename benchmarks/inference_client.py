"""What labkit's measuring client costs, against a plain ``openai`` SDK loop and raw ``httpx``,
streaming a fixed trace from the local server (labkit.serving) on this machine.

    .venv/bin/python benchmarks/inference_client.py                    # concurrency 1, 4, 16; 5 repeats
    .venv/bin/python benchmarks/inference_client.py --repeats 3 --prompts 8 --levels 1 16

One local server (``batched``, the tiny model, one torch thread) streams the same trace to
three clients: the same prompts, ``max_tokens`` and temperature 0, so every client gets the
same tokens. The clients, each a pool of exactly ``concurrency`` threads:

- ``labkit``: the exercise's client (labkit.testbeds.sambanova.inference.client.run_batch): a
  time stamp and the text of every chunk, the usage kept;
- ``sdk``: a plain loop over the SDK's stream, reading each chunk's text, nothing kept;
- ``httpx``: raw HTTP, the SSE lines read and not parsed (the floor of what a client costs).

The client and the server share the machine's cores, so whatever a client spends is taken
from the server: the output-token throughput (tokens / batch duration, tokens from the
server's usage) shows the cost. Repeats are interleaved (each repeat runs every level, every
client in turn, in a rotated order), and each repeat's labkit/sdk ratio is paired: the
medians and ranges across repeats are printed, with every failed request counted.
The measuring must cost under 5 % of the plain SDK's throughput (ratio >= 0.95).

Exit status: 0 when every request succeeded and the median ratio at every level is >= 0.95, else 1.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent import futures
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import openai  # noqa: E402

from labkit import serving  # noqa: E402

PROMPTS = ["Explain what a key-value cache stores during decoding.", "Why does batching raise throughput?",
           "What is the time to first token?", "Summarise rotary position embeddings.",
           "How does a server-sent event stream end?", "Compare latency and throughput.",
           "What limits decoding speed on a CPU?", "Name three parts of a transformer block."]

# (tokens, failures) of one request
Request = Callable[[str], Tuple[int, int]]


def labkit_client(server, max_tokens: int):
    """The exercise's measuring client, or None when this checkout does not have it yet."""
    try:
        from labkit.testbeds.sambanova.inference import client
    except ImportError:
        return None
    endpoint = client.Endpoint("local", server.base_url, server.model)
    options = client.Options(max_tokens=max_tokens, temperature=0.0, seed=0)
    sdk = client.open_client(endpoint, options)

    def run(prompts: Sequence[str], concurrency: int) -> Tuple[int, int, float]:
        traces, duration = client.run_batch(endpoint, list(enumerate(prompts)), concurrency, options, sdk=sdk)
        tokens = sum(t.output_tokens or 0 for t in traces if t.ok)
        return tokens, sum(1 for t in traces if not t.ok) + len(prompts) - len(traces), duration
    return run


def sdk_request(server, max_tokens: int) -> Request:
    sdk = openai.OpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0, timeout=60)

    def one(prompt: str) -> Tuple[int, int]:
        stream = sdk.chat.completions.create(model=server.model, messages=[{"role": "user", "content": prompt}],
                                             max_tokens=max_tokens, temperature=0, seed=0, stream=True,
                                             stream_options={"include_usage": True})
        tokens = 0
        for chunk in stream:
            if chunk.choices:
                chunk.choices[0].delta.content
            if chunk.usage is not None:
                tokens = chunk.usage.completion_tokens
        return tokens, 0
    return one


def httpx_request(server, max_tokens: int) -> Request:
    http = httpx.Client(base_url=server.base_url, timeout=60,
                        limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))

    def one(prompt: str) -> Tuple[int, int]:
        body = {"model": server.model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                "temperature": 0, "seed": 0, "stream": True, "stream_options": {"include_usage": True}}
        last = ""
        with http.stream("POST", "/chat/completions", json=body) as response:
            if response.status_code != 200:
                return 0, 1
            for line in response.iter_lines():
                if line.startswith("data: {") and '"usage"' in line:
                    last = line
        # the usage line's count, found without parsing every chunk
        return int(last.split('"completion_tokens": ', 1)[1].split(",", 1)[0]), 0
    return one


def pooled(request: Request) -> Callable[[Sequence[str], int], Tuple[int, int, float]]:
    def run(prompts: Sequence[str], concurrency: int) -> Tuple[int, int, float]:
        def safe(prompt: str) -> Tuple[int, int]:
            try:
                return request(prompt)
            except Exception:  # counted, never dropped
                return 0, 1
        begin = time.perf_counter()
        with futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
            results = list(pool.map(safe, prompts))
        return sum(r[0] for r in results), sum(r[1] for r in results), time.perf_counter() - begin
    return run


def spread(values: Sequence[float]) -> str:
    return "{:8.1f} [{:.1f}, {:.1f}]".format(statistics.median(values), min(values), max(values))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=16, help="requests per batch (the trace)")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--config", default="batched", choices=sorted(serving.CONFIGS))
    parser.add_argument("--threads", type=int, default=serving.DEFAULT_THREADS, help="the server's torch threads")
    args = parser.parse_args()
    prompts = [PROMPTS[i % len(PROMPTS)] + " ({})".format(i) for i in range(max(args.prompts, max(args.levels)))]
    with serving.start_server(config=args.config, model_size="tiny", threads=args.threads) as server:
        clients = {"sdk": pooled(sdk_request(server, args.max_tokens)),
                   "httpx": pooled(httpx_request(server, args.max_tokens))}
        measuring = labkit_client(server, args.max_tokens)
        if measuring is None:
            print("labkit's measuring client (labkit.testbeds.sambanova.inference.client) is not in this "
                  "checkout: only sdk and httpx are measured")
        else:
            clients["labkit"] = measuring
        print("{}; {} ({}), {} torch thread(s); {} prompts x {} tokens a batch; levels {}; {} repeats".format(
            server.info["description"], server.config, server.base_url, server.info["threads"], len(prompts),
            args.max_tokens, args.levels, args.repeats))
        for name, run in clients.items():  # warm-up: connections, the server's first steps; not counted
            run(prompts[:4], 4)
        rates: Dict[Tuple[str, int], List[float]] = {}
        failures: Dict[Tuple[str, int], int] = {}
        order = list(clients)
        for repeat in range(args.repeats):
            for level in args.levels:
                for name in order[repeat % len(order):] + order[:repeat % len(order)]:
                    tokens, failed, duration = clients[name](prompts, level)
                    rates.setdefault((name, level), []).append(tokens / duration)
                    failures[(name, level)] = failures.get((name, level), 0) + failed
            print("repeat {} done".format(repeat + 1), flush=True)
    print("\noutput tokens/s, median [min, max] over {} repeats; failed requests".format(args.repeats))
    print("{:>11} ".format("concurrency") + "".join("{:>28}".format(name) for name in order))
    ok = True
    for level in args.levels:
        print("{:>11} ".format(level) + "".join("{:>22} {:>5}".format(spread(rates[(n, level)]), failures[(n, level)])
                                                for n in order))
    if "labkit" in clients:
        print("\nlabkit / sdk throughput, paired per repeat: median [min, max]")
        for level in args.levels:
            ratios = [a / b for a, b in zip(rates[("labkit", level)], rates[("sdk", level)])]
            verdict = "ok" if statistics.median(ratios) >= 0.95 else "OVER 5 %"
            ok = ok and verdict == "ok"
            print("{:>11}  {:.3f} [{:.3f}, {:.3f}]  {}".format(level, statistics.median(ratios), min(ratios),
                                                                 max(ratios), verdict))
    failed = sum(failures.values())
    print("\nfailed requests: {} of {}".format(failed, len(prompts) * args.repeats * len(args.levels) * len(order)))
    return 0 if ok and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
