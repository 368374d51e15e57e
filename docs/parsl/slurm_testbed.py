"""Parsl config: Slurm, as on the ALCF AI testbeds (SambaNova, Cerebras, Graphcore login nodes).

    labkit sweep NOTEBOOK -p ... --out runs/x --executor parsl --config docs/parsl/slurm_testbed.py

Parsl submits one Slurm job per block; each job starts a worker pool that runs notebooks
(one kernel per worker). Set the partition/account and the environment line for your site
(the environment variables below override the defaults without editing the file). The
sweep folder (--out) must be on a file system the compute nodes share (home or project).
Verified here against a single-node Slurm (tests/sweep/test_parsl.py); on a testbed, check
the partition and the `worker_init` line with your site's documentation first.
"""

import os

from parsl.addresses import address_by_hostname
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.launchers import SrunLauncher
from parsl.providers import SlurmProvider

config = Config(
    executors=[
        HighThroughputExecutor(
            label="slurm",
            address=os.environ.get("LABKIT_PARSL_ADDRESS") or address_by_hostname(),
            max_workers_per_node=int(os.environ.get("LABKIT_PARSL_WORKERS", "1")),
            provider=SlurmProvider(
                partition=os.environ.get("LABKIT_SLURM_PARTITION") or None,
                account=os.environ.get("LABKIT_SLURM_ACCOUNT") or None,
                nodes_per_block=1,
                init_blocks=1,
                min_blocks=0,
                max_blocks=int(os.environ.get("LABKIT_SLURM_MAX_BLOCKS", "1")),
                walltime=os.environ.get("LABKIT_SLURM_WALLTIME", "01:00:00"),
                launcher=SrunLauncher(),
                # the environment a worker needs: the Python that has labkit, papermill, parsl
                worker_init=os.environ.get("LABKIT_WORKER_INIT", "source ~/venvs/labkit/bin/activate"),
                exclusive=False,
            ),
        )
    ],
    strategy="none",
)
