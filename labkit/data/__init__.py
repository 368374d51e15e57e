"""Datasets for the exercises: where they are cached, how they are checked, offline fallbacks."""

from labkit.data.cache import data_dir
from labkit.data.mnist import MnistData, load_mnist

__all__ = ["data_dir", "load_mnist", "MnistData"]
