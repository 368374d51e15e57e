"""SambaNova's exercises, one sub-package a course year, as in ``notebooks/sambanova/``:

- :mod:`labkit.testbeds.sambanova.bert_large` (2024): BERT-Large compiled with SambaFlow and
  trained as a Slurm job with ``--ntasks`` ranks, or as torch.distributed ranks here;
- :mod:`labkit.testbeds.sambanova.inference` (2025): LLM inference on Metis (SN40L) against
  Sophia (vLLM) through the OpenAI API.

    from labkit.testbeds.sambanova import bert_large, inference

The two share no code, so this package holds nothing of its own; it only answers the 2024
notebook's names (below) for hand-ins made before the years were sub-packages.
"""

from typing import Any, List

#: The names the 2024 notebook calls as ``sambanova.<name>``; they live in ``bert_large``.
__all__: List[str] = ["SPEC", "plan", "run_exercise", "show", "homework_runs", "throughput_table",
                      "format_throughput", "plot_throughput"]


def __getattr__(name: str) -> Any:
    if name in __all__:  # importing bert_large only when a 2024 notebook asks
        from labkit.testbeds.sambanova import bert_large

        return getattr(bert_large, name)
    raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))
