"""Cerebras: LLaMA-2-7B training with ``cszoo fit`` on a CS-3 (the 2025 course), or a small LLaMA anywhere.

``metrics``: :data:`LLAMA_METRICS`, the exercise's table of metrics.
"""

from __future__ import annotations

__all__ = []  # type: ignore[var-annotated]
