"""Parsl config: worker processes on this machine (the default executor needs no Parsl).

    labkit sweep NOTEBOOK -p epochs 2,4 --repeats 3 --out runs/x --executor parsl --config docs/parsl/local.py

Each worker drives one notebook kernel at a time. With GPUs, list them in
``available_accelerators`` and Parsl pins one per worker (CUDA_VISIBLE_DEVICES).
"""

import os

from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.providers import LocalProvider

WORKERS = int(os.environ.get("LABKIT_PARSL_WORKERS", "2"))

config = Config(
    executors=[
        HighThroughputExecutor(
            label="local",
            address="127.0.0.1",
            max_workers_per_node=WORKERS,
            # available_accelerators=["0", "1"],   # one GPU per worker
            provider=LocalProvider(init_blocks=1, min_blocks=0, max_blocks=1),
        )
    ],
    strategy="none",
)
