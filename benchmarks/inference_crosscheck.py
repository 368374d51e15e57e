"""labkit's inference measurement against GuideLLM's, on the same stand-in server, interleaved.

GuideLLM (https://github.com/vllm-project/guidellm; Python 3.10 or later) is installed apart from
labkit, in a git-ignored venv that borrows the project venv's torch and transformers (a ``.pth``
file) instead of downloading its own (pip would otherwise fetch torch with its CUDA libraries):

    .venv/bin/python -m venv benchmarks/out/guidellm-venv
    .venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
        > "$(benchmarks/out/guidellm-venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/zz_labkit.pth"
    benchmarks/out/guidellm-venv/bin/pip install 'guidellm==0.8.1'
    .venv/bin/python benchmarks/inference_crosscheck.py                # concurrency 4, 64 in / 32 out, 3 repeats
    .venv/bin/python benchmarks/inference_crosscheck.py --requests 40 --repeats 5
    .venv/bin/python benchmarks/inference_crosscheck.py --requests 40 --repeats 5 --guidellm-workers 1

One stand-in server (labkit.serving, ``batched``, the tiny model, one torch thread, on 127.0.0.1 at
a port the system picks) serves both clients, which take turns (the order alternates every repeat):

- ``guidellm``: ``guidellm run`` with a scenario file: ``openai_http`` backend on
  /v1/chat/completions, ``concurrent`` profile at the given streams, ``synthetic_text`` data of
  ``--input-tokens`` / ``--output-tokens`` (it sends ``ignore_eos``), ``max_requests``; its JSON read.
  GuideLLM runs its requests in worker processes (one per stream, at most 10, by default; at most
  ``--guidellm-workers`` with it), each an asyncio loop, beside its main process;
- ``labkit``: the inference exercise's own client (``run_batch``) at the same concurrency, with
  synthetic prompts of the same length made with the same tokenizer (the server's, saved for
  GuideLLM to load) and ``output_tokens`` with ``ignore_eos``, as the notebook sends them.

Both count time to first token (TTFT) from sending a request to its first streamed token, time per
output token (TPOT) as (E2E latency - TTFT) / (output tokens - 1) (GuideLLM's ``inter_token_latency``;
its ``time_per_output_token`` includes the first token), and output throughput as output tokens over
the run's duration (GuideLLM's benchmark duration, its start-up left out); the medians over requests of each run are compared across repeats:
median [min, max] of each client, and of labkit / guidellm paired per repeat. A warm-up run of each
client comes first and is left out. Loopback only; every run is bounded by its request count and a
timeout. Exit status 0 when every request of both clients completed, else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from labkit import llm, serving  # noqa: E402
from labkit.serving.model import VOCAB_SIZE  # noqa: E402
from labkit.testbeds.sambanova.inference.access import Secret  # noqa: E402
from labkit.testbeds.sambanova.inference.client import Endpoint, Options, run_batch  # noqa: E402
from labkit.testbeds.sambanova.inference.measure import count_tokens  # noqa: E402
from labkit.testbeds.sambanova.inference.prompts import builtin_prompts, synthetic_prompts  # noqa: E402
from labkit.testbeds.sambanova.inference.timing import summarize  # noqa: E402

GUIDELLM = ROOT / "benchmarks" / "out" / "guidellm-venv" / "bin" / "guidellm"
METRICS = ("ttft_ms", "tpot_ms", "output_tokens_per_s")


def labkit_run(server, tokenizer, args, seed: int) -> Dict[str, float]:
    endpoint = Endpoint("stand-in", server.base_url, server.model, Secret(server.api_key, "crosscheck"), local=True)
    pairs = synthetic_prompts(builtin_prompts(), args.requests, args.input_tokens, args.output_tokens, seed=seed,
                              tokenizer=tokenizer)
    prompts = [(k, text, length) for k, (text, length) in enumerate(pairs)]
    options = Options(max_tokens=args.output_tokens, temperature=0.0, seed=seed, timeout_s=args.timeout_s,
                      ignore_eos=True)
    traces, duration = run_batch(endpoint, prompts, args.concurrency, options)
    count_tokens(traces, {})
    figures = summarize(traces, duration)
    return {"ttft_ms": 1000 * figures["ttft_median_s"], "tpot_ms": 1000 * figures["tpot_median_s"],
            "output_tokens_per_s": figures["output_throughput"], "requests": figures["requests"],
            "failed": figures["failed"] + args.requests - figures["requests"],
            "output_tokens": figures["output_tokens"]}


def guidellm_run(server, tokenizer_dir: Path, args, seed: int, work: Path) -> Dict[str, float]:
    scenario = {
        "spec": {
            "backend": {"kind": "openai_http", "target": server.base_url[:-len("/v1")], "model": server.model,
                        "request_format": "/v1/chat/completions", "api_key": server.api_key,
                        "timeout": args.timeout_s},
            "profile": {"kind": "concurrent", "streams": [args.concurrency]},
            "data": [{"kind": "synthetic_text", "prompt_tokens": args.input_tokens,
                      "output_tokens": args.output_tokens}],
            "tokenizer": {"kind": "huggingface_auto", "model": str(tokenizer_dir)},
            "constraints": [{"kind": "max_requests", "count": args.requests}],
            "seed": {"kind": "static", "value": seed},
        }
    }
    path, result = work / "scenario.json", work / "guidellm-{}.json".format(seed)
    # the key is a throwaway of this run's server; the file is private and deleted with ``work``
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(scenario, handle)
    command = [str(GUIDELLM), "run", "--scenario", str(path), "--output", "kind=json,path={}".format(result),
               "--disable-console-interactive"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if args.guidellm_workers:
        env["GUIDELLM__MAX_WORKER_PROCESSES"] = str(args.guidellm_workers)
    done = subprocess.run(command, cwd=str(work), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=args.timeout_s * args.requests)
    if done.returncode != 0 or not result.is_file():
        raise SystemExit("guidellm failed (exit {}):\n{}".format(done.returncode, done.stdout[-4000:]))
    if os.environ.get("CROSSCHECK_KEEP"):  # for reading the report by hand
        Path(os.environ["CROSSCHECK_KEEP"]).write_text(result.read_text())
    return read_guidellm(json.loads(result.read_text()), args.requests)


def read_guidellm(report: dict, asked: int) -> Dict[str, float]:
    benchmark = report["benchmarks"][0]
    metrics = benchmark["metrics"]

    def successful(name: str) -> dict:
        return metrics[name]["successful"]

    totals = metrics["request_totals"] if "request_totals" in metrics else benchmark["request_totals"]
    duration = benchmark["duration"]
    tokens = successful("output_token_count")["total_sum"]
    return {"ttft_ms": successful("time_to_first_token_ms")["median"],
            "tpot_ms": successful("inter_token_latency_ms")["median"],
            "output_tokens_per_s": tokens / duration, "requests": totals["successful"],
            "failed": asked - totals["successful"], "output_tokens": tokens}


def spread(values: Sequence[float], digits: int = 3) -> str:
    form = "{:.%dg}" % digits
    return "{} [{}, {}]".format(form.format(statistics.median(values)), form.format(min(values)),
                                form.format(max(values)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--input-tokens", type=int, default=64)
    parser.add_argument("--output-tokens", type=int, default=32)
    parser.add_argument("--requests", type=int, default=32, help="requests per run of each client")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=serving.DEFAULT_THREADS, help="the server's torch threads")
    parser.add_argument("--timeout-s", type=float, default=60.0, help="per request")
    parser.add_argument("--guidellm-workers", type=int, default=0,
                        help="GuideLLM's most worker processes (GUIDELLM__MAX_WORKER_PROCESSES); 0: its default")
    args = parser.parse_args()
    if args.guidellm_workers < 0:
        parser.error("--guidellm-workers must be 0 (GuideLLM's default) or more (got {})".format(args.guidellm_workers))
    for name in ("concurrency", "input_tokens", "output_tokens", "requests", "repeats"):
        if getattr(args, name) < 1:
            parser.error("--{} must be at least 1 (got {})".format(name.replace("_", "-"), getattr(args, name)))
    if not GUIDELLM.is_file():
        parser.error("GuideLLM is not installed at {}: see the commands at the top of this file".format(GUIDELLM))
    tokenizer = llm.corpus_tokenizer(llm.load_corpus(), vocab_size=VOCAB_SIZE)  # the stand-in's own
    runs: Dict[str, Dict[str, List[float]]] = {"labkit": {}, "guidellm": {}}
    failed = {"labkit": 0, "guidellm": 0}
    with tempfile.TemporaryDirectory(prefix="labkit-crosscheck-") as tmp, \
            serving.start_server(config="batched", model_size="tiny", threads=args.threads) as server:
        work = Path(tmp)
        tokenizer.save_pretrained(str(work / "tokenizer"))
        print("{}; {} torch thread(s) at {}; concurrency {}, {} in / {} out tokens (ignore_eos), {} requests a run, "
              "{} repeats; GuideLLM workers: {}; load average {:.2f}".format(server.info["description"], server.info["threads"],
                                                       server.base_url, args.concurrency, args.input_tokens,
                                                       args.output_tokens, args.requests, args.repeats,
                                                       args.guidellm_workers or "its default",
                                                       os.getloadavg()[0]), flush=True)
        clients = {"labkit": lambda seed: labkit_run(server, tokenizer, args, seed),
                   "guidellm": lambda seed: guidellm_run(server, work / "tokenizer", args, seed, work)}
        for name, client in clients.items():  # warm-up: connections, the server's first steps; left out
            client(1000)
        order = list(clients)
        for repeat in range(args.repeats):
            for name in order[repeat % 2:] + order[:repeat % 2]:
                begin = time.perf_counter()
                got = clients[name](repeat)
                failed[name] += int(got["failed"])
                for metric in METRICS:
                    runs[name].setdefault(metric, []).append(got[metric])
                print("repeat {} {:>8}: TTFT {:.1f} ms, TPOT {:.2f} ms, {:.1f} output tokens/s, {} requests ({} "
                      "tokens), {} failed; {:.0f} s with start-up".format(
                          repeat + 1, name, got["ttft_ms"], got["tpot_ms"], got["output_tokens_per_s"],
                          int(got["requests"]), int(got["output_tokens"]), int(got["failed"]),
                          time.perf_counter() - begin), flush=True)
    print("\nmedian [min, max] over {} repeats (each run's median over its requests; throughput: output tokens / "
          "run duration)".format(args.repeats))
    print("{:>22} {:>26} {:>26} {:>28}".format("", "labkit", "guidellm", "labkit / guidellm (paired)"))
    for metric in METRICS:
        ratios = [a / b for a, b in zip(runs["labkit"][metric], runs["guidellm"][metric])]
        print("{:>22} {:>26} {:>26} {:>28}".format(metric, spread(runs["labkit"][metric]),
                                                   spread(runs["guidellm"][metric]), spread(ratios)))
    print("failed requests: labkit {}, guidellm {}; load average now {:.2f}".format(
        failed["labkit"], failed["guidellm"], os.getloadavg()[0]))
    return 1 if any(failed.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
