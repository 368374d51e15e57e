"""Samples/s of labkit's portable LLaMA training step against a plain ``transformers`` loop.

    python benchmarks/llama_train.py                                 # small preset, batches 4 and 16, 128 tokens, CPU
    python benchmarks/llama_train.py --model-size tiny --batch-sizes 8 --seq 64 --repeats 7
    python benchmarks/llama_train.py --device cuda --batch-sizes 8 32 --seq 512

Both train the same ``LlamaForCausalLM`` (same preset, same initial weights, 2,048-token
vocabulary) on the same token windows of the offline corpus, with the same optimizer (AdamW,
betas 0.9/0.95, eps 1e-5, weight decay 0.1, gradients clipped to norm 1.0: the course's
params_llama2_7b.yaml). The reference is the loop anyone would write first:
``loss = model(input_ids=x, labels=x).loss; loss.backward(); clip; optimizer.step();
optimizer.zero_grad(); loss.item()``. labkit's is the exercise's own loop,
:func:`labkit.testbeds.cerebras.llama2_7b.train.train` (``llm.train_step``, the warm-up schedule, the
modelzoo's rate tracker, the loss read back at report steps only), run from a config of the same
preset, seed, batch and length. The two alternate, ``--repeats`` times each, in this process; each
repeat's figure is samples/s over the steps after the first (warm-up) step (the exercise's
``steady_rate``); the table gives the median and the range (min-max), and the ratio of medians. A
breakdown then times the phases of labkit's step (forward, backward, clipping, optimizer, the rest)
to say where time goes.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from labkit import llm
from labkit.testbeds.cerebras import llama2_7b
from labkit.testbeds.cerebras.llama2_7b.train import train


def say(*parts):
    """Print now: rows appear as they are measured, also when the output goes to a file."""
    print(*parts, flush=True)


def plain_loop(model, batches, device, learning_rate=1e-3):
    """The obvious transformers loop; returns per-step seconds."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, betas=(0.9, 0.95), eps=1e-5,
                                  weight_decay=0.1)
    model.train()
    times = []
    for batch in batches:
        start = time.perf_counter()
        ids = batch["input_ids"].to(device)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        loss.item()
        times.append(time.perf_counter() - start)
    return times


def labkit_rate(model_size, batch_size, seq, steps, device):
    """Samples/s of the exercise's loop after its first step: it builds the same model (seed 0) and draws
    the same windows (seed 0) as the plain loop is given."""
    config = llama2_7b.SPEC.validate({"model_size": model_size, "batch_size": batch_size, "sequence_length": seq,
                                      "steps": steps, "log_steps": min(10, steps), "seed": 0, "learning_rate": 1e-3,
                                      "device": device.type})
    return train(config, device, echo=lambda line: None, progress=False).metrics["steady_rate"]


def samples_per_s(batch_size, step_times):
    steady = step_times[1:]  # the first step is warm-up, as in the exercise's steady_rate
    return batch_size * len(steady) / sum(steady)


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def breakdown(model, batches, device):
    """Median seconds of each phase of labkit's step over ``batches`` (after one warm-up step)."""
    optimizer = llm.make_optimizer(model, 1e-3)
    model.to(device).train()
    phases = {"forward": [], "backward": [], "clip": [], "optimizer": [], "step": []}
    for index, batch in enumerate(batches):
        _sync(device)
        t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        ids = batch["input_ids"].to(device)
        loss = model(input_ids=ids, labels=ids).loss
        _sync(device)
        t1 = time.perf_counter()
        loss.backward()
        _sync(device)
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), llm.MAX_GRAD_NORM)
        _sync(device)
        t3 = time.perf_counter()
        optimizer.step()
        _sync(device)
        t4 = time.perf_counter()
        if index:
            for name, seconds in (("forward", t1 - t0), ("backward", t2 - t1), ("clip", t3 - t2),
                                  ("optimizer", t4 - t3), ("step", t4 - t0)):
                phases[name].append(seconds)
    return {name: statistics.median(values) for name, values in phases.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-size", default="small", choices=[s for s in llm.MODEL_SIZES if s != "7b"])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    corpus = llm.load_corpus()
    tokenizer = llm.corpus_tokenizer(corpus, 2048)
    ids = llm.encode_text(tokenizer, corpus.train)
    say("model_size={} ({:.1f}M parameters) seq={} steps={} repeats={} device={} torch={} threads={}".format(
        args.model_size, llm.parameter_count(args.model_size, len(tokenizer)) / 1e6, args.seq, args.steps,
        args.repeats, device, torch.__version__, torch.get_num_threads()))
    say("{:>6} {:>26} {:>26} {:>7}".format("batch", "labkit samples/s med [range]", "plain samples/s med [range]",
                                             "ratio"))
    for batch_size in args.batch_sizes:
        stream = llm.token_batches(ids, batch_size, args.seq, seed=0)
        batches = [next(stream) for _ in range(args.steps)]
        rates = {"labkit": [], "plain": []}
        for repeat in range(args.repeats):
            order = ("labkit", "plain")
            for name in order if repeat % 2 == 0 else order[::-1]:  # interleaved, alternating who goes first
                if name == "labkit":
                    rates[name].append(labkit_rate(args.model_size, batch_size, args.seq, args.steps, device))
                    continue
                model = llm.build_model(args.model_size, vocab_size=len(tokenizer), seed=0).to(device)
                rates[name].append(samples_per_s(batch_size, plain_loop(model, batches, device)))
                del model
        med = {name: statistics.median(values) for name, values in rates.items()}
        say("{:>6} {:>10.2f} [{:.2f}-{:.2f}] {:>10.2f} [{:.2f}-{:.2f}] {:>6.3f}x".format(
            batch_size, med["labkit"], min(rates["labkit"]), max(rates["labkit"]),
            med["plain"], min(rates["plain"]), max(rates["plain"]), med["labkit"] / med["plain"]))
    model = llm.build_model(args.model_size, vocab_size=len(tokenizer), seed=0)
    stream = llm.token_batches(ids, args.batch_sizes[-1], args.seq, seed=0)
    phases = breakdown(model, [next(stream) for _ in range(args.steps)], device)
    total = phases.pop("step")
    say("where a step's time goes (labkit, batch {}, median of {} steps): {:.3f} s = ".format(
        args.batch_sizes[-1], args.steps - 1, total) + ", ".join(
            "{} {:.0f}%".format(name, 100 * seconds / total) for name, seconds in phases.items()))


if __name__ == "__main__":
    main()
