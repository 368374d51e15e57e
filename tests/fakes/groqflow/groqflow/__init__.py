"""Fake GroqFlow for labkit's tests (see tests/fakes/README.md): groqit() and GroqModel, no GroqChip."""

from groqflow.groqmodel.groqmodel import groqit  # noqa: F401  (the documented entry point)

__version__ = "0.0.0+fake"
