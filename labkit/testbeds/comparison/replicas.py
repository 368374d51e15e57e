"""How the scaling study's replicas run, one configuration at a time: ``torch.distributed`` processes
started by :mod:`labkit.rank_launcher` (:func:`measure_torch`: gloo on CPUs; NCCL and the
``labkit.accelerator`` policy on GPUs), or PopTorch's ``replicationFactor`` in one process
(:func:`measure_ipu`). docs/sweeps.md ("The scaling notebook": Replicas, What IPUs cannot run) says more.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple

from labkit import rank_launcher
from labkit.testbeds.comparison.models import build as build_model

__all__ = ["synthetic_images", "timed_epochs", "torch_replica", "measure_torch", "measure_ipu", "ipu_obstacle"]


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


def timed_epochs(step, images, labels, micro_batch: int, epochs: int, sync=None, min_epoch_seconds: float = 0.0,
                 agree=None) -> Dict[str, Any]:
    """Run ``epochs`` passes of ``step(x, y) -> loss``; time each epoch (between barriers).

    ``min_epoch_seconds`` (a GPU's): after the first epoch, steps timed for at least MIN_TIMED_SECONDS
    size the later epochs, cycling through the images, so that a timed epoch lasts at least that long (a GPU
    runs the 2,048 images of a CPU's epoch in milliseconds, too short to time); ``agree(steps)``
    gives every replica the same count (the largest). A loss may be a tensor on the device: the
    epoch's losses are read once at its end (inside its time), not once a step."""
    base_steps = len(images) // micro_batch
    steps, sized = base_steps, None
    times, losses = [], []
    for epoch in range(epochs):
        if epoch == 1 and min_epoch_seconds > 0 and base_steps:
            steps, sized = _steps_lasting(step, images, labels, micro_batch, base_steps, min_epoch_seconds, sync, agree)
        if sync:
            sync()
        start = time.perf_counter()
        pending = []
        for s in range(steps):
            i = s % base_steps
            pending.append(step(images[i * micro_batch:(i + 1) * micro_batch], labels[i * micro_batch:(i + 1) * micro_batch]))
        if pending and not isinstance(pending[0], float):
            import torch

            pending = torch.stack(pending).float().cpu().tolist()
        losses.extend(pending)  # a NaN loss goes on, as in the study: its speed is still measured
        if sync:
            sync()
        times.append(time.perf_counter() - start)
    return {"epoch_times": times, "losses": losses, "steps": steps, "sized": sized}


#: Steps run for at least this long before an epoch is sized from their pace: a few steps of a small
#: model on a GPU take a fraction of a millisecond, where a sync and the launches would decide the time.
MIN_TIMED_SECONDS = 0.1


def _steps_lasting(step, images, labels, micro_batch, base_steps, seconds, sync, agree):
    """Steps an epoch needs to last ``seconds`` (a quarter more, for safety), from passes over the
    ``base_steps`` steps repeated until they took MIN_TIMED_SECONDS (every replica runs as many passes,
    or DDP's exchanges would hang); and what to say about it: (steps timed, seconds they took)."""
    import math

    if sync:
        sync()
    start, timed = time.perf_counter(), 0
    while True:
        for i in range(base_steps):
            step(images[i * micro_batch:(i + 1) * micro_batch], labels[i * micro_batch:(i + 1) * micro_batch])
        timed += base_steps
        if sync:
            sync()
        took = time.perf_counter() - start
        short = int(took < MIN_TIMED_SECONDS)
        if not (agree(short) if agree else short):
            break
    needed = max(base_steps, math.ceil(timed * 1.25 * seconds / max(took, 1e-9)))
    return (agree(needed) if agree else needed), (timed, took)


def torch_replica(rank: rank_launcher.Rank, micro_batch: int, images_per_replica: int, epochs: int,
                  learning_rate: float, seed: int, use_cuda: bool, model_name: str) -> Optional[Dict[str, Any]]:
    """One replica: a process of a torch.distributed group (gloo on CPU, NCCL on GPUs); replica 0
    returns the epoch times, the losses and the steps per epoch."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel

    from labkit.accelerator import CapturedStep, describe, resolve_precision

    # a CPU replica is one core, as an IPU replica is one IPU: one thread each. (Letting one
    # replica use every core measures torch's intra-op threading, which on a small CNN and a
    # busy machine mostly measures contention.)
    torch.set_num_threads(1)
    distributed = rank.world_size > 1
    device = torch.device("cuda", rank.rank) if use_cuda else torch.device("cpu")
    if distributed:
        rank.join_group("nccl" if use_cuda else "gloo")
    torch.manual_seed(seed)  # the same initial weights on every replica
    model = build_model(model_name).to(device)
    trained = DistributedDataParallel(model, device_ids=[rank.rank] if use_cuda else None) if distributed else model
    # frozen parameters are neither updated nor exchanged (DDP reduces only those needing gradients)
    optimizer = torch.optim.SGD([p for p in trained.parameters() if p.requires_grad], lr=learning_rate)
    images, labels = synthetic_images(images_per_replica, seed + 1 + rank.rank)  # each replica its own shard
    images, labels = images.to(device), labels.to(device)
    precision = resolve_precision("auto", describe(device))  # a CPU: fp32, as always

    def step(x, y):
        with precision.step():
            optimizer.zero_grad()
            with precision.autocast(device):
                loss = F.cross_entropy(trained(x), y)
            loss.backward()
            optimizer.step()
        return loss.detach()

    def sync():
        if use_cuda:
            torch.cuda.synchronize(device)
        if distributed:
            dist.barrier()

    def agree(steps: int) -> int:  # every replica runs the largest count, or DDP's exchanges would hang
        if not distributed:
            return steps
        count = torch.tensor([steps], device=device)
        dist.all_reduce(count, op=dist.ReduceOp.MAX)
        return int(count.item())

    if use_cuda:  # one GPU: the step captured once and replayed; several: DDP's exchanges, eager
        fixed = not distributed and len(images) >= micro_batch
        launched = CapturedStep(step, (images[:micro_batch], labels[:micro_batch]), device,
                                "auto" if fixed else "eager", keep=(model, optimizer))
        timed_step, launch, launch_error = (lambda x, y: launched(x, y).clone()), launched.mode, launched.capture_error
    else:
        timed_step, launch, launch_error = (lambda x, y: step(x, y).item()), "eager", ""
    outcome = timed_epochs(timed_step, images, labels, micro_batch, epochs, sync,
                           min_epoch_seconds=1.0 if use_cuda else 0.0, agree=agree)
    outcome.update(precision=precision.name, launch=launch, device_name=describe(device).name)
    if launch_error:  # a CUDA graph was chosen and its capture failed
        outcome["launch_error"] = launch_error
    if distributed:
        dist.destroy_process_group()
    return outcome if rank.rank == 0 else None


def measure_torch(replicas: int, micro_batch: int, images_per_epoch: int, epochs: int,
                  learning_rate: float, seed: int, use_cuda: bool, model: str) -> Dict[str, Any]:
    """torch.distributed: ``replicas`` fresh processes (gloo on CPU, NCCL on GPUs), each its own shard.

    An interrupt does not stop the replicas (the study, inside ``interrupts.graceful()``, lets the
    configuration in progress finish); a second one, raised here, stops them and propagates."""
    args = (micro_batch, images_per_epoch // replicas, epochs, learning_rate, seed, use_cuda, model)
    # a fresh process even for one replica (spawn): every configuration starts from the same state
    gathered = rank_launcher.launch(torch_replica, replicas, args=args, start="spawn",
                            what="The scaling study's {} replica{}".format(replicas, "s" if replicas > 1 else ""))
    outcome = dict(gathered.results[0])
    outcome["images"] = outcome.pop("steps") * micro_batch * replicas
    return outcome


def ipu_obstacle(replicas: int, micro_batch: int, images_per_epoch: int) -> Optional[Tuple[str, str]]:
    """Why PopTorch cannot run this configuration, known before anything is compiled: (status,
    note) for the study's row, or None when it can run.

    - a replica count that is not a power of 2: PopTorch reserves IPUs in powers of 2 and refuses
      any other count when it compiles (popart_compiler/source/CompilerImpl.cpp, createDevice);
    - a combined batch (micro-batch x replicas) larger than the images per
      epoch: ``poptorch.DataLoader`` drops the incomplete batch, so it yields none and the model
      would never compile (python/__init__.py, DataLoader)."""
    if replicas & (replicas - 1):
        reserved = 1 << (replicas - 1).bit_length()
        return "cannot run", ("{} replicas: PopTorch reserves IPUs in powers of 2 and refuses to compile for {} (one "
                              "IPU a replica: it would have to reserve {}); use 1, 2, 4, 8, 16...".format(
                                  replicas, replicas, reserved))
    combined = micro_batch * replicas
    if combined > images_per_epoch:
        return "too few images", ("micro-batch {} x {} replica(s) = {:,} images a step, more than the {:,} images per "
                                  "epoch: PopTorch's DataLoader gives no batch, so nothing is compiled or timed".format(
                                      micro_batch, replicas, combined, images_per_epoch))
    return None


def measure_ipu(replicas: int, micro_batch: int, images_per_epoch: int, epochs: int, learning_rate: float,
                seed: int, model_name: str) -> Dict[str, Any]:
    """PopTorch: one process, ``replicationFactor(replicas)``; the first epoch includes compilation.

    A configuration PopTorch cannot run (:func:`ipu_obstacle`), or one it fails (a poptorch.Error
    at compilation or a step: "Failed to acquire 2 IPU(s)"...), comes back with ``status`` and
    ``note`` saying why, and whatever was measured before the failure."""
    obstacle = ipu_obstacle(replicas, micro_batch, images_per_epoch)
    if obstacle:
        return {"epoch_times": [], "losses": [], "images": 0, "status": obstacle[0], "note": obstacle[1]}
    import poptorch
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    from labkit.testbeds.graphcore.placement import poptorch_says, releasing

    class WithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = build_model(model_name)

        def forward(self, x, y):
            out = self.model(x)
            return out, F.cross_entropy(out, y)

    torch.manual_seed(seed)
    opts = poptorch.Options().deviceIterations(1).replicationFactor(replicas)
    opts.outputMode(poptorch.OutputMode.All)
    images, labels = synthetic_images(images_per_epoch, seed + 1)
    loader = poptorch.DataLoader(opts, torch.utils.data.TensorDataset(images, labels), batch_size=micro_batch,
                                 shuffle=True, drop_last=True)
    model = WithLoss()
    trainable = [p for p in model.parameters() if p.requires_grad]
    training_model = poptorch.trainingModel(model, opts, optimizer=torch.optim.SGD(trainable, lr=learning_rate))
    times: List[float] = []
    losses: List[float] = []
    seen = 0
    try:
        with releasing(training_model):  # the first call compiles and takes the IPUs
            for _ in range(epochs):
                start, seen = time.perf_counter(), 0
                for x, y in loader:
                    _, loss = training_model(x, y)
                    losses.append(float(loss.float().mean()))
                    seen += len(x)
                times.append(time.perf_counter() - start)
    except poptorch.Error as error:  # this configuration only: its row says why, the study goes on
        return {"epoch_times": times, "losses": losses, "images": 0, "status": "failed",
                "note": "PopTorch: " + poptorch_says(error)}
    return {"epoch_times": times, "losses": losses, "images": seen}
