"""The portable run's gradient averaging, checked against plain arithmetic on two real gloo ranks."""

import pytest
import torch

from labkit import rank_launcher
from labkit.testbeds.sambanova.bert_large.portable import PRELOAD, AllReduceOptimizer


def _rank(rank):
    import torch.distributed as dist

    rank.join_group("gloo")
    weight = torch.nn.Parameter(torch.zeros(3))
    optimizer = AllReduceOptimizer(torch.optim.SGD([weight], lr=1.0), rank.world_size)
    optimizer.zero_grad()
    (weight * torch.tensor([1.0, 2.0, 3.0]) * (rank.rank + 1)).sum().backward()  # gradient (r+1) x [1, 2, 3]
    optimizer.step()
    dist.destroy_process_group()
    return weight.detach().tolist()


def test_each_step_uses_the_mean_of_the_ranks_gradients():
    # the same launcher and fork server the portable run uses
    got = rank_launcher.launch(_rank, 2, start="forkserver", preload=PRELOAD, timeout=120).results
    # mean gradient = 1.5 x [1, 2, 3]; SGD with lr 1 from zeros gives its negative, on both ranks
    assert got[0] == pytest.approx([-1.5, -3.0, -4.5]) and got[1] == got[0]
