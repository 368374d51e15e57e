"""How the scaling study's replicas run: one configuration measured on CPU, CUDA or IPU.

    from labkit.testbeds.comparison import replicas
    outcome = replicas.measure_torch(2, 128, 2048, 2, 0.01, 0, use_cuda=False, model="small")
    outcome["epoch_times"], outcome["losses"], outcome["images"]

- CPU and CUDA (:func:`measure_torch`): ``torch.distributed`` (gloo or NCCL), one fresh process per
  replica, meeting through a file (``init_method="file://..."``) rather than a TCP port, so
  studies side by side cannot collide;
- IPU (:func:`measure_ipu`): PopTorch's ``replicationFactor(n)`` in one process.

Both return the raw epoch times, the losses and the images seen; :mod:`labkit.testbeds.comparison.study`
turns them into a row of the study.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any, Dict

from labkit.testbeds.comparison.models import build as build_model

__all__ = ["synthetic_images", "timed_epochs", "measure_torch", "measure_ipu"]


def synthetic_images(count: int, seed: int):
    """(images [count,1,28,28] float32, labels [count] int64): class c is a bar at row 2c+4."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (count,), generator=generator)
    images = 0.3 * torch.randn(count, 1, 28, 28, generator=generator)
    rows = (2 * labels + 4).tolist()
    for i, row in enumerate(rows):
        images[i, 0, row:row + 2, 4:24] += 1.0
    return images, labels


def timed_epochs(step, images, labels, micro_batch: int, epochs: int, sync=None) -> Dict[str, Any]:
    """Run ``epochs`` passes of ``step(x, y) -> loss``; time each epoch (between barriers)."""
    steps = len(images) // micro_batch
    times, losses = [], []
    for _ in range(epochs):
        if sync:
            sync()
        start = time.perf_counter()
        for s in range(steps):
            loss = step(images[s * micro_batch:(s + 1) * micro_batch], labels[s * micro_batch:(s + 1) * micro_batch])
            losses.append(float(loss))  # a NaN loss goes on, as in the study: its speed is still measured
        if sync:
            sync()
        times.append(time.perf_counter() - start)
    return {"epoch_times": times, "losses": losses, "steps": steps}


def _torch_rank(rank: int, world: int, micro_batch: int, images_per_replica: int, epochs: int,
                learning_rate: float, seed: int, use_cuda: bool, init_file: str, result_file: str,
                threads: int, model_name: str) -> None:
    """One replica: a process of a torch.distributed group (gloo on CPU, NCCL on GPUs)."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel

    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Kernel -> Interrupt reaches replicas too; the parent decides
    torch.set_num_threads(threads)
    distributed = world > 1
    device = torch.device("cuda", rank) if use_cuda else torch.device("cpu")
    if distributed:
        dist.init_process_group("nccl" if use_cuda else "gloo", init_method="file://" + init_file,
                                rank=rank, world_size=world)
    torch.manual_seed(seed)  # the same initial weights on every replica
    model = build_model(model_name).to(device)
    trained = DistributedDataParallel(model, device_ids=[rank] if use_cuda else None) if distributed else model
    # frozen parameters are neither updated nor exchanged (DDP reduces only those needing gradients)
    optimizer = torch.optim.SGD([p for p in trained.parameters() if p.requires_grad], lr=learning_rate)
    images, labels = synthetic_images(images_per_replica, seed + 1 + rank)  # each replica its own shard
    images, labels = images.to(device), labels.to(device)

    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(trained(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    def sync():
        if use_cuda:
            torch.cuda.synchronize(device)
        if distributed:
            dist.barrier()

    outcome = timed_epochs(step, images, labels, micro_batch, epochs, sync)
    if rank == 0:
        with open(result_file, "w") as f:
            json.dump(outcome, f)
    if distributed:
        dist.destroy_process_group()


def measure_torch(replicas: int, micro_batch: int, images_per_epoch: int, epochs: int,
                  learning_rate: float, seed: int, use_cuda: bool, model: str) -> Dict[str, Any]:
    """torch.distributed: ``replicas`` fresh processes (gloo on CPU, NCCL on GPUs), each its own shard."""
    import torch.multiprocessing as mp

    # a CPU replica is one core, as an IPU replica is one IPU: one thread each. (Letting one
    # replica use every core measures torch's intra-op threading, which on a small CNN and a
    # busy machine mostly measures contention.)
    threads = 1
    with tempfile.TemporaryDirectory(prefix="labkit-scaling-") as folder:
        init_file = os.path.join(folder, "rendezvous")
        result_file = os.path.join(folder, "rank0.json")
        args = (replicas, micro_batch, images_per_epoch // replicas, epochs, learning_rate, seed, use_cuda,
                init_file, result_file, threads, model)
        # a fresh process even for one replica: every configuration starts from the same state
        context = mp.spawn(_torch_rank, args=args, nprocs=replicas, join=False)
        try:
            while not context.join():
                pass
        except KeyboardInterrupt:  # a second interrupt: stop the replicas now, leave no process behind
            for process in context.processes:
                process.terminate()
                process.join(5)
            raise
        with open(result_file) as f:
            outcome = json.load(f)
    outcome["images"] = outcome.pop("steps") * micro_batch * replicas
    return outcome


def measure_ipu(replicas: int, micro_batch: int, images_per_epoch: int, epochs: int, learning_rate: float,
                seed: int, model_name: str, device_iterations: int = 1) -> Dict[str, Any]:
    """PopTorch: one process, ``replicationFactor(replicas)``; the first epoch includes compilation."""
    import poptorch
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class WithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = build_model(model_name)

        def forward(self, x, y):
            out = self.model(x)
            return out, F.cross_entropy(out, y)

    torch.manual_seed(seed)
    opts = poptorch.Options().deviceIterations(device_iterations).replicationFactor(replicas)
    opts.outputMode(poptorch.OutputMode.All)
    images, labels = synthetic_images(images_per_epoch, seed + 1)
    loader = poptorch.DataLoader(opts, torch.utils.data.TensorDataset(images, labels), batch_size=micro_batch,
                                 shuffle=True, drop_last=True)
    model = WithLoss()
    trainable = [p for p in model.parameters() if p.requires_grad]
    training_model = poptorch.trainingModel(model, opts, optimizer=torch.optim.SGD(trainable, lr=learning_rate))
    times, losses, seen = [], [], 0
    try:
        for _ in range(epochs):
            start, seen = time.perf_counter(), 0
            for x, y in loader:
                _, loss = training_model(x, y)
                losses.append(float(loss.float().mean()))
                seen += len(x)
            times.append(time.perf_counter() - start)
    finally:
        training_model.detachFromDevice()
    return {"epoch_times": times, "losses": losses, "images": seen}
