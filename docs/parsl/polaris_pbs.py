"""Parsl config: PBS Pro on Polaris (ALCF), one GPU per notebook run.

    labkit sweep NOTEBOOK -p ... --out runs/x --executor parsl --config docs/parsl/polaris_pbs.py

A Polaris node has 4 A100 GPUs: four workers per node, each pinned to one GPU by
``available_accelerators`` (Parsl sets CUDA_VISIBLE_DEVICES per worker). Set your project
(``LABKIT_PBS_ACCOUNT``) and the queue; the worker environment line loads the conda module
and your venv. Not verified here (no PBS Pro in CI): written from Parsl's PBSProProvider and
MpiExecLauncher documentation and the ALCF Polaris Parsl guide; check it on Polaris.
"""

import os

from parsl.addresses import address_by_hostname, address_by_interface
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.launchers import MpiExecLauncher
from parsl.providers import PBSProProvider



def _address() -> str:
    """Polaris compute nodes reach the login node over its bond0 interface."""
    try:
        return address_by_interface("bond0")
    except OSError:  # not on Polaris (e.g. checking this file elsewhere)
        return address_by_hostname()


config = Config(
    executors=[
        HighThroughputExecutor(
            label="polaris",
            address=os.environ.get("LABKIT_PARSL_ADDRESS") or _address(),
            max_workers_per_node=4,
            available_accelerators=["0", "1", "2", "3"],
            cpu_affinity="block-reverse",
            provider=PBSProProvider(
                account=os.environ.get("LABKIT_PBS_ACCOUNT", "YOUR_PROJECT"),
                queue=os.environ.get("LABKIT_PBS_QUEUE", "debug"),
                scheduler_options="#PBS -l filesystems=home:eagle",
                select_options="ngpus=4",
                worker_init=os.environ.get("LABKIT_WORKER_INIT",
                                           "module use /soft/modulefiles; module load conda; "
                                           "conda activate; source ~/venvs/labkit/bin/activate"),
                nodes_per_block=1,
                init_blocks=0,
                min_blocks=0,
                max_blocks=1,
                cpus_per_node=64,
                walltime="01:00:00",
                launcher=MpiExecLauncher(bind_cmd="--cpu-bind", overrides="--depth=64 --ppn 1"),
            ),
        )
    ],
    strategy="simple",
)
