"""labkit: a lab book for the ALCF AI-testbeds course module.

Each exercise notebook under ``notebooks/`` imports this package; the logic lives here,
where it is tested, and the narrative lives in the notebook.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
