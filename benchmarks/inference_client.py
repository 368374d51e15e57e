"""What labkit's measuring client costs, against a plain ``openai`` SDK loop and raw ``httpx``,
streaming a fixed trace from the local server (labkit.serving) on this machine.

    .venv/bin/python benchmarks/inference_client.py                    # concurrency 1, 4, 16; 5 repeats
    .venv/bin/python benchmarks/inference_client.py --repeats 3 --prompts 8 --levels 1 16
    .venv/bin/python benchmarks/inference_client.py --compare-configs     # the server's two configurations

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

``--compare-configs`` measures the server instead: its ``batched`` and ``sequential``
configurations through the plain SDK loop (output tokens/s, median time to first token as the
client and as the server measure it).

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
import psutil  # noqa: E402

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


def compare_configs(args, prompts: Sequence[str]) -> int:
    """The server's two configurations through the plain SDK loop: throughput and time to first token."""
    rows: Dict[Tuple[str, int], Dict[str, List[float]]] = {}
    failed = 0
    for config in ("batched", "sequential"):
        with serving.start_server(config=config, model_size="tiny", threads=args.threads) as server:
            sdk = openai.OpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0, timeout=120)

            def one(prompt: str) -> Tuple[int, float, float]:
                start = time.perf_counter()
                first, tokens, server_ttft = None, 0, 0.0
                for chunk in sdk.chat.completions.create(
                        model=server.model, messages=[{"role": "user", "content": prompt}], max_tokens=args.max_tokens,
                        temperature=0, stream=True, stream_options={"include_usage": True}):
                    if first is None and chunk.choices and chunk.choices[0].delta.content:
                        first = time.perf_counter() - start
                    if chunk.usage is not None:
                        tokens, server_ttft = chunk.usage.completion_tokens, chunk.usage.model_extra["time_to_first_token"]
                return tokens, first or 0.0, server_ttft

            for prompt in prompts[:4]:  # warm-up, not counted
                one(prompt)
            for repeat in range(args.repeats):
                for level in args.levels:
                    begin = time.perf_counter()
                    with futures.ThreadPoolExecutor(max_workers=level) as pool:
                        results = list(pool.map(one, prompts))
                    duration = time.perf_counter() - begin
                    row = rows.setdefault((config, level), {"tokens/s": [], "ttft": [], "server ttft": []})
                    row["tokens/s"].append(sum(r[0] for r in results) / duration)
                    row["ttft"].append(1000 * statistics.median(r[1] for r in results))
                    row["server ttft"].append(1000 * statistics.median(r[2] for r in results))
                    failed += sum(1 for r in results if r[0] == 0)
    print("\nthe two configurations, plain SDK loop; median [min, max] over {} repeats".format(args.repeats))
    print("{:>11} {:>11} {:>24} {:>26} {:>26}".format("config", "concurrency", "output tokens/s",
                                                      "median TTFT, client (ms)", "median TTFT, server (ms)"))
    for (config, level), row in rows.items():
        print("{:>11} {:>11} {:>24} {:>26} {:>26}".format(config, level, spread(row["tokens/s"]), spread(row["ttft"]),
                                                          spread(row["server ttft"])))
    print("failed requests: {}".format(failed))
    return 1 if failed else 0


def spread(values: Sequence[float]) -> str:
    return "{:8.1f} [{:.1f}, {:.1f}]".format(statistics.median(values), min(values), max(values))


def cpu_seconds(process: "psutil.Process") -> float:
    times = process.cpu_times()
    return times.user + times.system


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=16, help="requests per batch (the trace)")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--config", default="batched", choices=sorted(serving.CONFIGS))
    parser.add_argument("--threads", type=int, default=serving.DEFAULT_THREADS, help="the server's torch threads")
    parser.add_argument("--compare-configs", action="store_true",
                        help="instead: the server's batched and sequential configurations, through the SDK loop")
    args = parser.parse_args()
    prompts = [PROMPTS[i % len(PROMPTS)] + " ({})".format(i) for i in range(max(args.prompts, max(args.levels)))]
    if args.compare_configs:
        return compare_configs(args, prompts)
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
        served = psutil.Process(server.pid)
        rates: Dict[Tuple[str, int], List[float]] = {}
        client_cpu: Dict[Tuple[str, int], List[float]] = {}
        server_cpu: Dict[Tuple[str, int], List[float]] = {}
        failures: Dict[Tuple[str, int], int] = {}
        order = list(clients)
        for repeat in range(args.repeats):
            for level in args.levels:
                for name in order[repeat % len(order):] + order[:repeat % len(order)]:
                    mine, theirs = time.process_time(), cpu_seconds(served)
                    tokens, failed, duration = clients[name](prompts, level)
                    key = (name, level)
                    client_cpu.setdefault(key, []).append(1000 * (time.process_time() - mine) / len(prompts))
                    server_cpu.setdefault(key, []).append(1000 * (cpu_seconds(served) - theirs) / len(prompts))
                    rates.setdefault(key, []).append(tokens / duration)
                    failures[key] = failures.get(key, 0) + failed
            print("repeat {} done".format(repeat + 1), flush=True)
    ok = report(args, order, rates, client_cpu, server_cpu, failures)
    failed = sum(failures.values())
    print("\nfailed requests: {} of {}".format(failed, len(prompts) * args.repeats * len(args.levels) * len(order)))
    return 0 if ok and not failed else 1


def report(args, order, rates, client_cpu, server_cpu, failures) -> bool:
    table = (("output tokens/s (wall clock)", rates), ("client CPU ms per request", client_cpu),
             ("server CPU ms per request", server_cpu))
    for title, values in table:
        print("\n{}, median [min, max] over {} repeats".format(title, args.repeats))
        print("{:>11} ".format("concurrency") + "".join("{:>26}".format(name) for name in order))
        for level in args.levels:
            print("{:>11} ".format(level) + "".join("{:>26}".format(spread(values[(n, level)])) for n in order))
    print("\nfailed requests per client: " + ", ".join(
        "{} {}".format(n, sum(failures[(n, level)] for level in args.levels)) for n in order))
    if "labkit" not in order:
        return True
    ok = True
    print("\nwhat measuring costs, paired per repeat, median [min, max]:")
    print("  wall: labkit / sdk output tokens/s (noisy where other work shares the machine)")
    print("  cpu:  (labkit client CPU - sdk client CPU) / (sdk client CPU + server CPU), the share of the")
    print("        machine's work measuring adds: the throughput it costs when the cores are the limit")
    for level in args.levels:
        ratios = [a / b for a, b in zip(rates[("labkit", level)], rates[("sdk", level)])]
        costs = [(c - s) / (s + v) for c, s, v in zip(client_cpu[("labkit", level)], client_cpu[("sdk", level)],
                                                      server_cpu[("sdk", level)])]
        verdict = "ok" if statistics.median(costs) < 0.05 else "OVER 5 %"
        ok = ok and verdict == "ok"
        print("{:>11}  wall {:.3f} [{:.3f}, {:.3f}]   cpu {:+.1%} [{:+.1%}, {:+.1%}]  {}".format(
            level, statistics.median(ratios), min(ratios), max(ratios), statistics.median(costs), min(costs),
            max(costs), verdict))
    return ok


if __name__ == "__main__":
    sys.exit(main())
