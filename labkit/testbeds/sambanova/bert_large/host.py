"""Where the SambaNova exercise can run: SambaFlow's paths, whether this is a SambaNova node,
which target ('testbed', 'portable' or 'log') a configuration resolves to, and for the portable
ranks the device they run on and whether they fit in this machine's memory.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import List, Tuple

from labkit import jobs
from labkit.devices import DeviceError, mps_available
from labkit.params import Config, ParameterError
from labkit.testbeds.sambanova.bert_large.spec import EXERCISE

__all__ = ["SambaFlow", "sambanova_host", "resolve_target", "ranks_device", "TooBigForMemory"]


@dataclass(frozen=True)
class SambaFlow:
    """Where SambaFlow lives on a SambaNova node (the course's paths under /opt/sambaflow)."""

    root: str = "/opt/sambaflow"
    python: str = "python"
    data_dir: str = "/data/ANL/wikicorpus_en"

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
            raise DeviceError("target='testbed' needs a SambaNova node (sbatch on PATH and SambaFlow at {}); "
                              "none is here. Use target='portable' (or 'auto') to run torch.distributed ranks on "
                              "this machine, or target='log' with a BertLarge.out from the testbed.".format(setup.root))
        if config.model_size != "large":
            raise ParameterError(["model_size = {!r}: SambaFlow's compile configs in the course are for BERT-Large "
                                  "only; use model_size='large' on the testbed".format(config.model_size)], EXERCISE)
    return target


class TooBigForMemory(ParameterError, MemoryError):
    """The portable run would not fit in this machine's memory: the parameters must shrink.

    A ParameterError, so Jupyter shows its one message and no traceback (a student's Run All
    with the testbed's defaults ends here), and a MemoryError for code that catches that.
    """


def ranks_device(config: Config, ranks: int) -> Tuple[str, List[str]]:
    """Where ``ranks`` portable ranks run ('cuda': NCCL, one GPU per rank; or 'cpu': gloo) and notes on the
    choice; raises :class:`TooBigForMemory` before anything is spawned when they cannot fit (an estimate,
    see :func:`_memory_estimate`), saying which smaller size to use."""
    device_kind, notes = _choose_device(config.device, ranks)
    weights, per_rank = _memory_estimate(config)
    available = _available_memory(device_kind)
    # On CUDA the micro-batch probe backs off to what fits: the weights and optimizer state must fit
    needed = weights if device_kind == "cuda" else per_rank * ranks
    if needed > 0.9 * available:
        raise TooBigForMemory([
            "model_size={!r} with ntasks={}, batch_size={}, max_seq_length={}: the portable run needs about "
            "{:.0f} GB{} but {:.1f} GB is available here, so nothing was run. Allowed here: something smaller, e.g. "
            "model_size='micro', ntasks=2, ntasks_per_node=2, batch_size=4, steps=4, max_seq_length=32 "
            "('tiny' or 'micro' with a small batch_size and fewer ntasks); the full-size run is for the testbed "
            "(target='testbed') or for reading its log (log_path=...).".format(
                config.model_size, ranks, config.batch_size, config.max_seq_length, needed / 1e9,
                " per GPU" if device_kind == "cuda" else " for all ranks", available / 1e9)], EXERCISE)
    return device_kind, notes


def _memory_estimate(config: Config) -> Tuple[float, float]:
    """Bytes of one rank's weights, gradients and AdamW state, and of everything one rank needs.

    A rough upper estimate, to refuse runs that cannot fit before spawning anything: fp32
    weights+gradients+2 Adam moments+the all-reduce buffer (20 bytes a parameter) and the
    activations kept for backward (Korthikanti et al. 2022, doubled for fp32).
    """
    from labkit import bert

    preset = dict(bert.MODEL_SIZES[config.model_size])
    vocab = preset.pop("vocab_size", bert.BERT_VOCAB_SIZE)
    h, layers, heads = preset["hidden_size"], preset["num_hidden_layers"], preset["num_attention_heads"]
    ffn = preset["intermediate_size"]
    weights = 20.0 * (vocab * h + 512 * h + layers * (4 * h * h + 2 * h * ffn) + h * h)
    s, b = config.max_seq_length, config.batch_size
    activations = layers * s * b * h * (34 + 5 * heads * s / float(h)) * 2
    return weights, weights + activations + 4.0 * b * s * h * 4


def _available_memory(device_kind: str) -> float:
    if device_kind == "cuda":
        import torch

        return float(torch.cuda.get_device_properties(0).total_memory)
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        return float(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def _choose_device(requested: str, ranks: int) -> Tuple[str, List[str]]:
    """'cuda' (NCCL, one GPU per rank) or 'cpu' (gloo), and notes on the choice."""
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if requested == "cuda":
        if gpus < ranks:
            raise DeviceError("device='cuda' with ntasks={}: NCCL needs one GPU per rank and torch sees {} here. "
                              "Use ntasks <= {} or device='cpu' (gloo).".format(ranks, gpus, gpus))
        return "cuda", []
    if requested == "auto" and gpus >= ranks:
        return "cuda", []
    notes = []
    if requested == "auto" and not gpus and mps_available():
        notes.append("Apple MPS has no torch.distributed backend, so the ranks ran on the CPU with gloo.")
    if requested == "auto" and gpus:
        notes.append("{} ranks but {} GPU(s): NCCL needs one GPU per rank, so the ranks ran on the CPU "
                     "with gloo.".format(ranks, gpus))
    return "cpu", notes
