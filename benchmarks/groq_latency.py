"""Latency and IPS of PyTorch eager against ONNX Runtime for the Groq exercise's BERT-tiny,
batch 1, sequence lengths 128 and 256, same machine, same run.

    PYTHONPATH=. .venv/bin/python benchmarks/groq_latency.py
    PYTHONPATH=. .venv/bin/python benchmarks/groq_latency.py --model sentence-transformers/all-MiniLM-L6-v2 --reps 200
    PYTHONPATH=. .venv/bin/python benchmarks/groq_latency.py --threads 1    # steadier on a shared machine

Both backends run the same model (offline: labkit's BERT-tiny stand-in, which has BERT-tiny's
shape) on the same padded inputs: real sentences from labkit's test set, tokenized to the
length, as the proof point's dataset loop feeds them. Each figure is the median of several
rounds of ``--reps`` inferences after a warm-up; the ratio is eager / ONNX Runtime latency.
For reference, the proof point's ``cpu`` row on a GroqNode host was 2.29 ms at 128 and 4.15 ms
at 256 (PyTorch eager, batch 1, the dataset loop).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from labkit.testbeds.groq import backends, evalsets, models  # noqa: E402

PROOF_POINT_CPU_MS = {128: 2.29, 256: 4.15}


def measure(engine, inputs, reps: int, rounds: int) -> float:
    """Median over ``rounds`` of the mean seconds per inference over ``reps`` inputs."""
    for sample in inputs[:10]:  # warm-up: allocators, ORT's first-run planning
        engine(sample)
    per_round = []
    for _ in range(rounds):
        start = time.perf_counter()
        for i in range(reps):
            engine(inputs[i % len(inputs)])
        per_round.append((time.perf_counter() - start) / reps)
    return statistics.median(per_round)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=models.BERT_TINY)
    parser.add_argument("--lengths", default="128,256")
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None,
                        help="intra-op threads for both (default: each library's own choice)")
    args = parser.parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    loaded = models.load(args.model)
    print("model: {} ({})".format(args.model, models.short_source(loaded.used)))
    print("host: {} | {} CPUs | torch {} ({} threads) | onnxruntime {}".format(
        platform.processor() or platform.machine(), os.cpu_count(), torch.__version__, torch.get_num_threads(),
        __import__("onnxruntime").__version__))
    print("{:>6} {:>12} {:>10} {:>12} {:>10} {:>8} {:>22}".format(
        "length", "eager ms", "eager IPS", "ORT ms", "ORT IPS", "ratio", "proof point cpu ms"))
    for length in [int(x) for x in args.lengths.split(",")]:
        data = evalsets.load(loaded.task, loaded.tokenizer, length, hub=False)
        dummy = evalsets.dummy_inputs(loaded.task, length)
        eager = backends.make("cpu", loaded.model, loaded.task, dummy)
        ort = backends.make("onnxruntime", loaded.model, loaded.task, dummy, label=loaded.requested,
                             threads=args.threads)
        e = measure(eager, data.inputs, args.reps, args.rounds)
        o = measure(ort, data.inputs, args.reps, args.rounds)
        print("{:>6} {:>12.3f} {:>10.1f} {:>12.3f} {:>10.1f} {:>7.2f}x {:>22}".format(
            length, e * 1000, 1 / e, o * 1000, 1 / o, e / o,
            PROOF_POINT_CPU_MS.get(length, "--") if args.model == models.BERT_TINY else "--"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
