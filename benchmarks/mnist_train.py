"""Training throughput of labkit's portable MNIST path against a faithful port of the tutorial.

    .venv/bin/python benchmarks/mnist_train.py               # one epoch each, full MNIST
    .venv/bin/python benchmarks/mnist_train.py --samples 12000

Both train the tutorial's network at its settings (micro-batch 8, 50 micro-batches a step,
fp32, SGD lr 0.03) on the real MNIST from ../shared (or LABKIT_DATA_DIR), in this process, one
after the other, and then test on the 10,000 test images. The faithful port is the course's
loop on a CPU: a torch DataLoader over torchvision's MNIST with ToTensor() and Normalize(), a
batch of batch_size x device_iterations samples per step, split into micro-batches. Prints
samples/s of each (warm-up excluded for both), their ratio, and each test accuracy.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from labkit.data import load_mnist  # noqa: E402
from labkit.testbeds import graphcore  # noqa: E402
from labkit.testbeds.graphcore.model import Network, TrainingModelWithLoss  # noqa: E402
from labkit.testbeds.graphcore.train import train as train_mnist  # noqa: E402

BATCH, ITERATIONS, LR, TEST_BATCH = 8, 50, 0.03, 80


def torchvision_root(data_dir: Path) -> str:
    """torchvision's MNIST wants raw IDX files in <root>/MNIST/raw: unpack them into a temp dir."""
    root = Path(tempfile.mkdtemp(prefix="labkit-bench-"))
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for gz in data_dir.glob("*-ubyte.gz"):
        with gzip.open(gz) as src, open(raw / gz.name[:-3], "wb") as dst:
            shutil.copyfileobj(src, dst)
    for plain in data_dir.glob("*-ubyte"):
        shutil.copy(plain, raw / plain.name)
    return str(root)


def faithful_port(root: str, samples: int, seed: int):
    import torchvision

    transform = torchvision.transforms.Compose([torchvision.transforms.ToTensor(),
                                                torchvision.transforms.Normalize((0.1307,), (0.3081,))])
    train = torchvision.datasets.MNIST(root, train=True, download=False, transform=transform)
    train = torch.utils.data.Subset(train, range(samples))
    test = torchvision.datasets.MNIST(root, train=False, download=False, transform=transform)
    torch.manual_seed(seed)
    model = TrainingModelWithLoss(Network())
    optimizer = torch.optim.SGD(model.model.parameters(), lr=LR)
    loader = torch.utils.data.DataLoader(train, batch_size=BATCH * ITERATIONS, shuffle=True, drop_last=True)
    seen, start = 0, None
    for step, (data, labels) in enumerate(loader):
        if step == 1:  # the first step is warm-up, as for labkit's path
            seen, start = 0, time.perf_counter()
        for i in range(ITERATIONS):
            _out, loss = model(data[i * BATCH:(i + 1) * BATCH], labels[i * BATCH:(i + 1) * BATCH])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        seen += len(labels)
    throughput = seen / (time.perf_counter() - start)
    model.eval()
    total, batches = 0.0, 0
    with torch.no_grad():
        for data, labels in torch.utils.data.DataLoader(test, batch_size=TEST_BATCH, drop_last=True):
            total += (model(data).argmax(1) == labels).float().mean().item() * 100
            batches += 1
    return throughput, total / batches


def labkit_path(data_dir: Path, samples: int, seed: int):
    config = graphcore.SPEC.validate({"epochs": 1, "batch_size": BATCH, "device_iterations": ITERATIONS,
                                      "learning_rate": LR, "seed": seed, "test_batch_size": TEST_BATCH,
                                      "max_train_samples": samples, "data_dir": str(data_dir), "device": "cpu"})
    result = train_mnist(config, torch.device("cpu"), verbose=False).details
    return result.history.throughput, result.test_accuracy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=60000, help="training samples (one epoch)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    default = ROOT.parent / "shared" / "data" / "mnist"
    data_dir = Path(os.environ.get("LABKIT_DATA_DIR") or default)
    load_mnist(data_dir, download=False, allow_sample=False)  # the full MNIST here, or an error saying so
    root = torchvision_root(data_dir)
    print("torch {}, {} threads, {} training samples, batch {} x {} device iterations".format(
        torch.__version__, torch.get_num_threads(), args.samples, BATCH, ITERATIONS))
    try:
        ref_speed, ref_acc = faithful_port(root, args.samples, args.seed)
        print("faithful port : {:8.0f} samples/s  test accuracy {:.2f}%".format(ref_speed, ref_acc))
        lab_speed, lab_acc = labkit_path(data_dir, args.samples, args.seed)
        print("labkit        : {:8.0f} samples/s  test accuracy {:.2f}%".format(lab_speed, lab_acc))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("speed-up      : {:.2f}x".format(lab_speed / ref_speed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
