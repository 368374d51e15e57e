"""SambaNova's exercises, one sub-package a course year: :mod:`.bert_large` (2024: BERT-Large
compiled with SambaFlow, trained as a Slurm job) and :mod:`.inference` (2025: LLM inference on Metis
against Sophia through the OpenAI API). They share no code; this package only answers the 2024
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
