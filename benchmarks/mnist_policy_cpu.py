"""The MNIST step on a CPU before and after the accelerator policy: not slower, the same numbers.

    .venv/bin/python benchmarks/mnist_policy_cpu.py                # 6 interleaved repeats, 2,000 samples
    .venv/bin/python benchmarks/mnist_policy_cpu.py --repeats 10 --samples 4000

"before" is the training loop as it was before labkit.accelerator (kept here as the reference, in
this process); "after" is labkit.testbeds.graphcore.train.train, whose step now runs through
labkit.accelerator.CapturedStep (eager on a CPU) inside a precision.autocast block (fp32: none).
Both train the tutorial's network at its settings (micro-batch 8, 50 micro-batches a step, SGD
lr 0.03) on real MNIST, from the same seed, alternating before/after each repeat. Prints each
one's steady samples/s, the after/before ratio per repeat (median and range), and whether both
end with bit-identical weights and losses.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from labkit.data import load_mnist  # noqa: E402
from labkit.testbeds import graphcore  # noqa: E402
from labkit.testbeds.graphcore.model import build_model  # noqa: E402
from labkit.testbeds.graphcore.train import to_tensor, train  # noqa: E402

BATCH, ITERATIONS, LR, SEED = 8, 50, 0.03, 0


def before(images, labels, epochs):
    """The loop as it was (labkit at 3ba011c, train._epochs), returning (samples/s after the first step, losses,
    the model)."""
    model = build_model(SEED, images.device)  # seeded as train() seeds it: dropout then draws the same masks
    params = [p for p in model.model.parameters() if p.requires_grad]
    shuffle = torch.Generator().manual_seed(SEED)
    model.train()
    per_step = BATCH * ITERATIONS
    steps_per_epoch = len(labels) // per_step
    losses, steady, samples, step = [], 0.0, 0, 0
    for _ in range(epochs):
        order = torch.randperm(len(labels), generator=shuffle).to(labels.device)
        for _ in range(steps_per_epoch):
            start = time.perf_counter()
            base = (step % steps_per_epoch) * per_step
            outputs, step_losses = [], []
            for micro in range(ITERATIONS):
                idx = order[base + micro * BATCH: base + (micro + 1) * BATCH]
                output, loss = model(images[idx], labels[idx])
                for p in params:
                    p.grad = None
                loss.backward()
                with torch.no_grad():
                    torch._foreach_add_(params, [p.grad for p in params], alpha=-LR)
                outputs.append(output.detach())
                step_losses.append(loss.detach())
            step_labels = labels[order[base: base + per_step]]
            (torch.cat(outputs).argmax(1) == step_labels).sum().item()
            losses.append(torch.stack(step_losses).mean().item())
            step += 1
            if step > 1:
                steady += time.perf_counter() - start
                samples += per_step
    return samples / steady, losses, model


def after(images, labels, epochs):
    config = graphcore.SPEC.validate({"epochs": epochs, "batch_size": BATCH, "device_iterations": ITERATIONS,
                                      "learning_rate": LR, "seed": SEED, "max_train_samples": len(labels),
                                      "max_test_samples": 80, "device": "cpu"})
    result = train(config, images.device, verbose=False).details
    return result.history.throughput, [s.loss for s in result.history.steps], result.model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=6)
    args = parser.parse_args()
    device = torch.device("cpu")
    data = load_mnist(None)
    images = to_tensor(data.train_images[:args.samples], device)
    labels = torch.from_numpy(data.train_labels[:args.samples]).to(device)
    rates = {"before": [], "after": []}
    ratios, same = [], True
    for repeat in range(args.repeats):
        results = {}
        for name, loop in ((("before", before), ("after", after)) if repeat % 2 == 0 else
                           (("after", after), ("before", before))):
            rate, losses, model = loop(images, labels, args.epochs)
            results[name] = (rate, losses, [p.detach().clone() for p in model.parameters()])
            rates[name].append(rate)
        ratios.append(results["after"][0] / results["before"][0])
        same = same and results["after"][1] == results["before"][1] and all(
            torch.equal(a, b) for a, b in zip(results["after"][2], results["before"][2]))
        print("repeat {}: before {:.0f} samples/s, after {:.0f} samples/s, ratio {:.3f}".format(
            repeat + 1, results["before"][0], results["after"][0], ratios[-1]), flush=True)
    print("torch {}, {} threads, {} samples x {} epochs, {} repeats (interleaved)".format(
        torch.__version__, torch.get_num_threads(), args.samples, args.epochs, args.repeats))
    for name in ("before", "after"):
        print("{:>6}: median {:.0f} samples/s (range {:.0f}-{:.0f})".format(
            name, statistics.median(rates[name]), min(rates[name]), max(rates[name])))
    print("after/before: median {:.3f} (range {:.3f}-{:.3f})".format(statistics.median(ratios), min(ratios),
                                                                     max(ratios)))
    print("bit-identical losses and weights: {}".format(same))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
