"""SambaNova's exercises, one sub-package a course year, as in ``notebooks/sambanova/``:

- :mod:`labkit.testbeds.sambanova.bert_large` (2024): BERT-Large compiled with SambaFlow and
  trained as a Slurm job with ``--ntasks`` ranks, or as torch.distributed ranks here;
- :mod:`labkit.testbeds.sambanova.inference` (2025): LLM inference on Metis (SN40L) against
  Sophia (vLLM) through the OpenAI API.

    from labkit.testbeds.sambanova import bert_large, inference

The two share no code, so this package holds nothing of its own.
"""

from typing import Any, List

#: Nothing of its own: the exercises are the sub-packages ``bert_large`` and ``inference``.
__all__: List[str] = []


def __getattr__(name: str) -> Any:
    # 2024 hand-ins say `from labkit.testbeds import sambanova; sambanova.run_exercise(config)`:
    # the BERT-Large exercise's public names resolve here, imported only when such a notebook asks.
    if not name.startswith("_") and name not in ("bert_large", "inference"):
        from labkit.testbeds.sambanova import bert_large

        if name in bert_large.__all__:
            return getattr(bert_large, name)
    raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))
