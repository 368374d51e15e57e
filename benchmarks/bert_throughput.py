"""Samples/s of labkit's portable BERT against a plain ``transformers`` training loop.

    python benchmarks/bert_throughput.py                        # tiny BERT, batches 8 and 32, CPU
    python benchmarks/bert_throughput.py --model-size base --batch-sizes 32 128 --device cuda

Both train the same ``BertForPreTraining`` (same config, same initial weights, same AdamW) on
the same synthetic batches, in this process, one after the other, alternating over
``--rounds`` rounds; each figure is the best round's samples/s over the steps after the
first (warm-up) step. The reference is the loop anyone would write first:
``loss = model(**batch).loss; loss.backward(); optimizer.step(); optimizer.zero_grad()``
with ``loss.item()`` each step. labkit's loop differs in computing the masked-LM output layer
only at the masked positions (as the modelzoo does) and in reading the loss back at log steps
only; the loss itself is the same number (tests/bert checks it).
"""

from __future__ import annotations

import argparse
import time

import torch

from labkit import bert


def plain_loop(model, batches, device, learning_rate=1e-4):
    """The obvious transformers loop; returns per-step seconds."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    model.train()
    times = []
    for batch in batches:
        start = time.perf_counter()
        batch = {k: v.to(device) for k, v in batch.items()}
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss.item()
        times.append(time.perf_counter() - start)
    return times


def labkit_loop(model, batches, device, learning_rate=1e-4):
    result = bert.train(model, iter(batches), steps=len(batches), log_steps=len(batches), device=device,
                        learning_rate=learning_rate, progress=False)
    return result.step_times


def samples_per_sec(batch_size, step_times):
    steady = step_times[1:]  # the first step is warm-up in both loops
    return batch_size * len(steady) / sum(steady)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-size", default="tiny", choices=list(bert.MODEL_SIZES))
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    print("model_size={} seq={} steps={} rounds={} device={} torch={} threads={}".format(
        args.model_size, args.seq, args.steps, args.rounds, device, torch.__version__, torch.get_num_threads()))
    print("{:>6} {:>16} {:>16} {:>7}".format("batch", "labkit samples/s", "plain samples/s", "ratio"))
    for batch_size in args.batch_sizes:
        vocab = bert.model_config(args.model_size, args.seq).vocab_size
        batches = list(bert.synthetic_batches(batch_size, args.seq, vocab, seed=0, num_batches=args.steps))
        best = {"labkit": 0.0, "plain": 0.0}
        for _ in range(args.rounds):
            for name, loop in (("labkit", labkit_loop), ("plain", plain_loop)):
                model = bert.build_model(args.model_size, args.seq, seed=0).to(device)
                torch.manual_seed(0)
                rate = samples_per_sec(batch_size, loop(model, batches, device))
                best[name] = max(best[name], rate)
                del model
        print("{:>6} {:>16.1f} {:>16.1f} {:>6.2f}x".format(batch_size, best["labkit"], best["plain"],
                                                          best["labkit"] / best["plain"]))


if __name__ == "__main__":
    main()
