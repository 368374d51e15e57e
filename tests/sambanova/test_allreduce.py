"""The portable run's gradient averaging, checked against plain arithmetic on two real gloo ranks."""

import datetime

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from labkit.testbeds.sambanova.launch import AllReduceOptimizer, process_context


def _rank(rank, world, port, results):
    store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=datetime.timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    weight = torch.nn.Parameter(torch.zeros(3))
    optimizer = AllReduceOptimizer(torch.optim.SGD([weight], lr=1.0), world)
    optimizer.zero_grad()
    (weight * torch.tensor([1.0, 2.0, 3.0]) * (rank + 1)).sum().backward()  # gradient (r+1) x [1, 2, 3]
    optimizer.step()
    results.put((rank, weight.detach().tolist()))
    dist.destroy_process_group()


def test_each_step_uses_the_mean_of_the_ranks_gradients():
    world = 2
    store = dist.TCPStore("127.0.0.1", 0, world_size=None, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=60))
    context = process_context(mp)  # the same fork server the portable run uses
    results = context.Queue()
    procs = [context.Process(target=_rank, args=(r, world, store.port, results)) for r in range(world)]
    for p in procs:
        p.start()
    got = dict(results.get(timeout=120) for _ in range(world))
    for p in procs:
        p.join(30)
    results.close()
    assert [p.exitcode for p in procs] == [0, 0]
    # mean gradient = 1.5 x [1, 2, 3]; SGD with lr 1 from zeros gives its negative, on both ranks
    assert got[0] == pytest.approx([-1.5, -3.0, -4.5]) and got[1] == got[0]
