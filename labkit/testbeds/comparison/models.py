"""The models the scaling study trains (parameter ``model``).

- ``"small"``: two convolutions and one linear layer, 6,818 parameters, all trained. Quick, but
  its gradients are tiny, so replicas exchange almost nothing and its scaling says little.
- ``"representative"``: exactly the parameter counts the study's Keras training logs print:
  8,922,155 parameters, 4,512,347 trainable and 4,409,808 frozen.

Known from the study's logs: those counts, and 70,000 images per epoch (MNIST-sized data). Assumed
here: 28x28 one-channel inputs and ten classes; the frozen half is the bottom of the network (a
feature extractor) and the trained half a dense classifier; layer widths chosen only so that the
counts match. Replicas exchange the gradients of the trainable parameters, so the bytes sent per
step (18 MB) are the study's; the arithmetic per image (about 40 MFLOP) is an assumption.
"""

from __future__ import annotations

from typing import Tuple

__all__ = ["MODELS", "build", "model_choice", "parameter_counts"]

#: Model names the ``model`` parameter accepts, with what each is.
MODELS = {
    "representative": "CNN with the study's parameter counts: 8,922,155, of which 4,409,808 frozen",
    "small": "two convolutions and a linear layer, 6,818 parameters (fast, little to exchange)",
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


_BUILDERS = {"representative": _representative, "small": _small}


def model_choice(name: str) -> str:
    """``name`` when it names a model; else a ValueError listing the allowed names."""
    if name not in _BUILDERS:
        raise ValueError("model = {!r}: unknown; allowed: {}".format(name, ", ".join(repr(m) for m in MODELS)))
    return name


def build(name: str):
    """A fresh model (torch.nn.Module) by name; frozen parameters have ``requires_grad=False``."""
    return _BUILDERS[model_choice(name)]()


def parameter_counts(model) -> Tuple[int, int, int]:
    """(total, trainable, frozen) parameter counts, as Keras' ``model.summary()`` prints them."""
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    return trainable + frozen, trainable, frozen
