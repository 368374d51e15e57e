"""labkit's MNIST, BERT-Large and LLaMA training steps against stock PyTorch on the same shapes, one process.

    python benchmarks/gpu_throughput.py                  # on a GPU: the exercises' shapes
    python benchmarks/gpu_throughput.py --rounds 5       # more interleaved repeats
    python benchmarks/gpu_throughput.py --cpu            # tiny shapes on the CPU: exercises the code only

Stock PyTorch is what anyone writes first, in three forms: eager fp32, bf16 autocast, and bf16 autocast
with ``torch.compile`` (CUDA only: inductor on a CPU needs a compiler and minutes). labkit's is its own
step as the exercises run it on that device: :func:`labkit.bert.train_step` with the precision
:mod:`labkit.accelerator` resolves (and the encoder compiled, as a long BERT-Large run is),
:func:`labkit.llm.train_step` likewise, and MNIST's step through :class:`labkit.accelerator.CapturedStep`
(a CUDA graph on a GPU). Every case runs in each of ``--rounds`` rounds, in turn (interleaved, so a
clock change or a neighbour hits every case alike); a round times ``--steps`` steps after warm-up.
Each line prints the median samples/s over rounds with the range, and labkit's ratio to each stock
form (median and range of the per-round ratios). On a CPU the shapes are tiny and the figures are NOT
the GPU's: docs/performance.md keeps those, measured by tests/gpu/device_check.sh on a lent GPU.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import torch

from labkit import accelerator, bert, llm
from labkit.testbeds.graphcore.model import build_model as build_mnist

Case = Tuple[Callable[[], None], int]  # one step, samples a step


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _autocast(device: torch.device, bf16: bool):
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)


def stock_cases(device: torch.device, build: Callable[[], torch.nn.Module], optimizer_of: Callable[[Any], Any],
                loss_of: Callable[[Any], torch.Tensor], per_step: int, compile_ok: bool) -> Dict[str, Case]:
    """Stock PyTorch on the same shapes: eager fp32, bf16 autocast and (where it runs) bf16 compiled;
    ``loss_of(forward)`` is one forward's loss."""

    def stock(bf16: bool, compiled: bool) -> Callable[[], None]:
        model = build()
        optimizer = optimizer_of(model)
        forward = torch.compile(model) if compiled else model

        def step() -> None:
            optimizer.zero_grad(set_to_none=True)
            with _autocast(device, bf16):
                loss = loss_of(forward)
            loss.backward()
            optimizer.step()
        return step

    cases = {"stock eager fp32": (stock(False, False), per_step), "stock bf16 autocast": (stock(True, False), per_step)}
    if compile_ok:
        cases["stock bf16 compiled"] = (stock(True, True), per_step)
    return cases


def _adamw(model: torch.nn.Module) -> Any:
    return torch.optim.AdamW(model.parameters(), lr=1e-4, **({"fused": True} if next(model.parameters()).is_cuda else {}))


def mnist_cases(device: torch.device, batch: int, compile_ok: bool) -> Dict[str, Case]:
    images = torch.randn(batch, 1, 28, 28, device=device)
    labels = torch.randint(0, 10, (batch,), device=device)
    cases = stock_cases(device, lambda: build_mnist(0, device), lambda m: torch.optim.SGD(m.parameters(), lr=0.03),
                        lambda forward: forward(images, labels)[1], batch, compile_ok)
    model = build_mnist(0, device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.03)
    precision = accelerator.resolve_precision("auto", accelerator.describe(device), launch_bound=True)

    def labkit_step(x, y):
        with precision.step():
            optimizer.zero_grad(set_to_none=True)
            with precision.autocast(device):
                loss = model(x, y)[1]
            loss.backward()
            optimizer.step()
        return loss

    captured = accelerator.CapturedStep(labkit_step, (images, labels), device, keep=(model, optimizer))
    cases["labkit ({}, {})".format(precision.name, captured.mode)] = (lambda: captured(images, labels), batch)
    return cases


def bert_cases(device: torch.device, size: str, batch: int, seq: int, compile_ok: bool) -> Dict[str, Case]:
    data = next(bert.synthetic_batches(batch, seq, bert.model_config(size, seq).vocab_size, seed=0))
    data = {k: v.to(device) for k, v in data.items()}
    cases = stock_cases(device, lambda: bert.build_model(size, seq, seed=0).to(device), _adamw,
                        lambda forward: forward(**data).loss, batch, compile_ok)
    model = bert.build_model(size, seq, seed=0).to(device)
    optimizer = bert.make_optimizer(model)
    precision = accelerator.resolve_precision("auto", accelerator.describe(device))
    if compile_ok:
        model.bert.compile()
    cases["labkit ({}{})".format(precision.name, ", compiled" if compile_ok else "")] = (
        lambda: bert.train_step(model, data, optimizer, device, precision=precision), batch)
    return cases


def llama_cases(device: torch.device, size: str, batch: int, seq: int, compile_ok: bool) -> Dict[str, Case]:
    vocab = 2048
    ids = torch.randint(0, vocab, (batch, seq), device=device)
    cases = stock_cases(device, lambda: llm.build_model(size, vocab_size=vocab, seed=0, memory_bytes=2 ** 62).to(device),
                        _adamw, lambda forward: forward(input_ids=ids, labels=ids).loss, batch * seq, compile_ok)
    model = llm.build_model(size, vocab_size=vocab, seed=0, memory_bytes=2 ** 62).to(device)
    optimizer = llm.make_optimizer(model)
    precision = accelerator.resolve_precision("auto", accelerator.describe(device))
    batch_ = {"input_ids": ids, "labels": ids}
    cases["labkit ({})".format(precision.name)] = (
        lambda: llm.train_step(model, batch_, optimizer, device, precision=precision), batch * seq)
    return cases


def measure(cases: Dict[str, Case], device: torch.device, rounds: int, steps: int, warmup: int) -> Dict[str, List[float]]:
    """Samples (or tokens) per second of each case in each round, the cases interleaved."""
    for step, _ in cases.values():
        for _ in range(warmup):
            step()
    _sync(device)
    rates: Dict[str, List[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, (step, samples) in cases.items():
            start = time.perf_counter()
            for _ in range(steps):
                step()
            _sync(device)
            rates[name].append(samples * steps / (time.perf_counter() - start))
    return rates


def report(title: str, unit: str, rates: Dict[str, List[float]]) -> List[str]:
    lines = ["{} ({}; median over {} rounds, range in brackets)".format(title, unit, len(next(iter(rates.values()))))]
    ours = next(name for name in rates if name.startswith("labkit"))
    for name, values in rates.items():
        lines.append("  {:<28} {:>12,.0f}  [{:,.0f} - {:,.0f}]".format(name, statistics.median(values), min(values),
                                                                         max(values)))
    for name, values in rates.items():
        if name == ours:
            continue
        ratios = [a / b for a, b in zip(rates[ours], values)]
        lines.append("  {} / {}: {:.2f}x  [{:.2f} - {:.2f}]".format(ours, name, statistics.median(ratios),
                                                                   min(ratios), max(ratios)))
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="tiny shapes on the CPU (exercises the code, not a figure)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None, help="timed steps a case a round")
    parser.add_argument("--only", choices=("mnist", "bert", "llama"), action="append")
    args = parser.parse_args(argv)
    on_gpu = torch.cuda.is_available() and not args.cpu
    device = torch.device("cuda" if on_gpu else "cpu")
    info = accelerator.describe(device)
    print("device: {} ({}), torch {}".format(info.describe(), device, torch.__version__))
    if not on_gpu:
        print("CPU, tiny shapes: this exercises the benchmark; it is NOT the GPU figure (docs/performance.md).")
    wanted = args.only or ["mnist", "bert", "llama"]
    steps = args.steps or (20 if on_gpu else 2)
    lines: List[str] = []
    if "mnist" in wanted:
        rates = measure(mnist_cases(device, 8, on_gpu), device, args.rounds, steps * (20 if on_gpu else 1), 5)
        lines += report("MNIST CNN, micro-batch 8", "samples/s", rates)
    if "bert" in wanted:
        size, batch, seq = ("large", 256, 128) if on_gpu else ("micro", 8, 32)
        rates = measure(bert_cases(device, size, batch, seq, on_gpu), device, args.rounds, max(1, steps // 2), 2)
        lines += report("BERT-{} pre-training, batch {} x {} tokens".format(size, batch, seq), "sequences/s", rates)
        if on_gpu:
            torch.cuda.empty_cache()
    if "llama" in wanted:
        size, batch, seq = ("small", 8, 1024) if on_gpu else ("tiny", 2, 32)
        rates = measure(llama_cases(device, size, batch, seq, on_gpu), device, args.rounds, max(1, steps // 2), 2)
        lines += report("LLaMA {} preset, batch {} x {} tokens".format(size, batch, seq), "tokens/s", rates)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
