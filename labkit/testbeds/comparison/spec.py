"""Parameters of the IPU-vs-GPU scaling notebook (notebooks/comparison/ipu_vs_gpu.ipynb)."""

from __future__ import annotations

from typing import List, Optional

from labkit.params import PATH, Param, Spec, existing_file
from labkit.testbeds.comparison.models import MODELS

__all__ = ["SPEC"]


def _positive_ints(values: List[int]) -> Optional[str]:
    if not values:
        return "give at least one value"
    bad = [v for v in values if v < 1]
    return "every value must be >= 1 (got {})".format(bad) if bad else None


SPEC = Spec(
    "comparison/ipu_vs_gpu",
    Param("replicas", list, [1, 2, 4, 8, 16], "data-parallel replicas to try (those the hardware allows run)",
          item_type=int, check=_positive_ints),
    Param("micro_batch_sizes", list, [10, 128, 256, 512], "samples per replica per step", item_type=int,
          check=_positive_ints),
    Param("epochs", int, 2, "passes over the data; throughput is taken from the second on", min=2, max=100),
    Param("images_per_epoch", int, 2048, "synthetic images per epoch, split over the replicas (the study: 70,000)",
          min=1),
    Param("model", str, "representative", "the CNN trained: the study's parameter counts, or a small fast one",
          choices=tuple(MODELS)),
    Param("learning_rate", float, 0.01, "SGD step size (a huge one shows a diverged run)", min=0, min_exclusive=True),
    Param("device", str, "auto", "where replicas run", choices=("auto", "cpu", "cuda", "ipu")),
    Param("seed", int, 0, "seeds the weights and the synthetic images", min=0),
    Param("reference_csv", PATH, None, "CSV of throughput measured elsewhere; None: the published IPU-POD16 "
          "and A100 table (labkit/testbeds/comparison/reference/scaling_pod16_a100.csv)",
          optional=True, check=existing_file),
)
