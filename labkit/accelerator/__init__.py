"""One accelerator policy for every portable training path: precision, micro-batches, how a step is launched.

On a CPU nothing changes: fp32, the whole batch, eager steps (CPU numbers and golden copies stay).
On a GPU: bf16 autocast where the GPU has it (Ampere or newer), the largest micro-batch a measured
probe fits (cached per device, model and sequence length) with gradient accumulation keeping the
global batch, and a step captured once and replayed where shapes are fixed.
torch is imported lazily: ``import labkit.accelerator`` costs nothing where torch is absent.
"""

from __future__ import annotations

from labkit.accelerator.launch import LAUNCH_MODES, CapturedStep, measure_step_seconds
from labkit.accelerator.micro_batch import (MicroBatch, NothingFits, choose_micro_batch, fits,
                                            is_out_of_memory, micro_batch_cache_file, probe_micro_batch)
from labkit.accelerator.precision import (PEAK_BF16_FLOPS, PRECISIONS, TESTBED_PRECISION, AcceleratorError,
                                          DeviceInfo, Precision, describe, device_info, mfu, peak_flops,
                                          resolve_precision, utilisation)

__all__ = [
    "PRECISIONS", "DeviceInfo", "describe", "device_info", "Precision", "resolve_precision", "TESTBED_PRECISION",
    "MicroBatch", "choose_micro_batch", "probe_micro_batch", "micro_batch_cache_file", "is_out_of_memory",
    "fits", "NothingFits", "LAUNCH_MODES", "CapturedStep", "measure_step_seconds",
    "PEAK_BF16_FLOPS", "peak_flops", "mfu", "utilisation", "AcceleratorError",
]
