"""The models the scaling study trains (parameter ``model``): ``"representative"`` has exactly the
parameter counts the study's Keras training logs print, its layer widths chosen only so that the
counts match; ``"small"`` is quick but has almost nothing to exchange. docs/sweeps.md ("The scaling
notebook", **Model**) says what is known of the study's model and what is assumed.
"""

from __future__ import annotations

from typing import Tuple

__all__ = ["MODELS", "build", "model_choice", "parameter_counts"]

#: Model names the ``model`` parameter accepts, with what each is.
MODELS = {
    "representative": "CNN with the study's parameter counts: 8,922,155, of which 4,409,808 frozen",
    "small": "two convolutions and a linear layer, 9,098 parameters (fast, little to exchange)",
}


def _small():
    import torch.nn as nn

    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 7 * 7, 10),
    )


def _representative():
    import torch.nn as nn

    frozen = nn.Sequential(  # 4,409,808 parameters, never updated (Keras: trainable=False)
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 80, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(80 * 7 * 7, 992), nn.ReLU(),
        nn.Linear(992, 512), nn.ReLU(),
    )
    frozen.requires_grad_(False)
    trained = nn.Sequential(  # 4,512,347 parameters: the gradients replicas exchange
        nn.Linear(512, 4449), nn.ReLU(),
        nn.Linear(4449, 500), nn.ReLU(),
        nn.Linear(500, 10),
    )
    return nn.Sequential(frozen, trained)


def model_choice(name: str) -> str:
    """``name`` when it names a model; else a ValueError listing the allowed names."""
    if name not in MODELS:
        raise ValueError("model = {!r}: unknown; allowed: {}".format(name, ", ".join(repr(m) for m in MODELS)))
    return name


def build(name: str):
    """A fresh model (torch.nn.Module) by name; frozen parameters have ``requires_grad=False``."""
    return {"representative": _representative, "small": _small}[model_choice(name)]()


def parameter_counts(model) -> Tuple[int, int, int]:
    """(total, trainable, frozen) parameter counts, as Keras' ``model.summary()`` prints them."""
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    return trainable + frozen, trainable, frozen
