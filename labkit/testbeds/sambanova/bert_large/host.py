"""Where the SambaNova exercise can run: SambaFlow's paths, whether this is a SambaNova node,
and which target ('testbed', 'portable' or 'log') a configuration resolves to.

    from labkit.testbeds.sambanova.bert_large.host import resolve_target, sambanova_host
    sambanova_host()                 # sbatch on PATH and SambaFlow under /opt/sambaflow
    resolve_target(config)           # says why when the asked-for target is impossible
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Tuple

from labkit import jobs
from labkit.params import Config, ParameterError
from labkit.testbeds.sambanova.bert_large.spec import EXERCISE

__all__ = ["SambaFlow", "sambanova_host", "resolve_target"]


@dataclass(frozen=True)
class SambaFlow:
    """Where SambaFlow lives on a SambaNova node (the course's paths under /opt/sambaflow)."""

    root: str = "/opt/sambaflow"
    python: str = "python"
    data_dir: str = "/data/ANL/wikicorpus_en"
    srun_flags: Tuple[str, ...] = ("--mpi=pmi2",)

    @property
    def app(self) -> str:
        return os.path.join(self.root, "apps", "nlp", "transformers_on_rdu")

    @property
    def hook(self) -> str:
        return os.path.join(self.app, "transformers_hook.py")

    @property
    def activate(self) -> str:
        return os.path.join(self.app, "venv", "bin", "activate")

    @property
    def snfadm(self) -> str:
        return os.path.join(self.root, "bin", "snfadm")


def sambanova_host(setup: SambaFlow = SambaFlow()) -> bool:
    """True on a SambaNova node: Slurm's sbatch and SambaFlow (its BERT app or snrdtoolkit) are here."""
    sambaflow = os.path.isfile(setup.hook) or shutil.which("snrdtoolkit") is not None
    return jobs.slurm_available() and sambaflow


def resolve_target(config: Config, setup: SambaFlow = SambaFlow()) -> str:
    """'testbed', 'portable' or 'log', saying why when the asked-for target is impossible."""
    target = config.target
    if target == "auto":
        if config.log_path is not None:
            return "log"
        return "testbed" if sambanova_host(setup) else "portable"
    if target == "log" and config.log_path is None:
        raise ParameterError(["target = 'log': give log_path, the training log (BertLarge.out) to read"], EXERCISE)
    if target == "testbed":
        if not sambanova_host(setup):
            from labkit.devices import DeviceError

            raise DeviceError("target='testbed' needs a SambaNova node (sbatch on PATH and SambaFlow at {}); "
                              "none is here. Use target='portable' (or 'auto') to run torch.distributed ranks on "
                              "this machine, or target='log' with a BertLarge.out from the testbed.".format(setup.root))
        if config.model_size != "large":
            raise ParameterError(["model_size = {!r}: SambaFlow's compile configs in the course are for BERT-Large "
                                  "only; use model_size='large' on the testbed".format(config.model_size)], EXERCISE)
    return target

