"""The prompts a run sends: the ones that ship with labkit, a local file, or a Hugging Face dataset.

The built-in prompts (prompts.json, 32 questions about serving language models) are what Run All
uses with no network; the homework asks for a dataset of the student's choice.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any, List, Optional, Tuple, Union

from labkit.errors import LabkitError

__all__ = ["load_prompts", "builtin_prompts", "PromptError", "LOCAL_FORMATS", "synthetic_prompts", "lengths",
           "encode"]

#: Local file suffixes and the ``datasets`` builder that reads each.
LOCAL_FORMATS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet", ".txt": "text"}


class PromptError(LabkitError, ValueError):
    """The prompts could not be loaded; the message names the dataset, split or field and what to do."""

    shown_as = "PromptError"


def builtin_prompts() -> List[str]:
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "prompts.json"), encoding="utf-8") as f:
        return list(json.load(f)["prompt"])


def _load_dataset(name: str, split: str):
    try:
        import datasets
    except ImportError:
        raise PromptError("dataset = {!r} needs the datasets package (pip install datasets), or use "
                          "dataset = 'builtin'".format(name)) from None
    suffix = os.path.splitext(name)[1].lower()
    try:
        if os.path.isfile(name) and suffix in LOCAL_FORMATS:
            return datasets.load_dataset(LOCAL_FORMATS[suffix], data_files={split: name}, split=split)
        return datasets.load_dataset(name, split=split)
    except Exception as exc:  # noqa: BLE001 - the hub is unreachable, a split is missing, ...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PromptError("dataset = {!r}, split {!r} could not be loaded ({}); check the name and split on the "
                          "Hugging Face hub, or use dataset = 'builtin' offline".format(name, split, first[:200])) \
            from None


def load_prompts(dataset: str, split: str, field: str, count: int) -> List[str]:
    """The first ``count`` prompts (texts of ``field``); fewer when the dataset is smaller. Empty texts are skipped."""
    if dataset == "builtin":
        texts = builtin_prompts()
    else:
        data = _load_dataset(dataset, split)
        columns = list(getattr(data, "column_names", None) or [])
        if field not in columns:
            raise PromptError("dataset_field = {!r} is not a field of {} ({}); its fields: {}".format(
                field, dataset, split, ", ".join(columns) or "none"))
        values = data.select(range(min(len(data), count * 2 + 10)))[field]
        texts = [value for value in values if isinstance(value, str)]
    texts = [t for t in texts if t.strip()]
    if dataset == "builtin" and texts:  # more prompts than ship: the list again (a server may cache their prefixes)
        texts = (texts * (count // len(texts) + 1))
    texts = texts[:count]
    if not texts:
        raise PromptError("dataset {!r} gave no prompt texts in field {!r}".format(dataset, field))
    return texts


def lengths(count: int, centre: int, spread: float, draw: random.Random) -> List[int]:
    """``count`` lengths drawn uniformly from [centre*(1-spread), centre*(1+spread)] (all ``centre`` at 0)."""
    low, high = max(1, int(round(centre * (1 - spread)))), max(1, int(round(centre * (1 + spread))))
    return [draw.randint(low, high) for _ in range(count)]


def encode(tokenizer: Any, text: str) -> List[Any]:
    """Token ids (words when ``tokenizer`` is None, an estimate)."""
    if tokenizer is None:
        return text.split()
    encoded = tokenizer.encode(text, add_special_tokens=False)
    return list(getattr(encoded, "ids", encoded))  # tokenizers.Tokenizer gives an Encoding, transformers a list


def synthetic_prompts(texts: List[str], count: int, input_tokens: Optional[int], output_tokens: Optional[int],
                      spread: float = 0.0, seed: int = 0,
                      tokenizer: Any = None) -> List[Union[str, Tuple[str, int]]]:
    """``count`` prompts of about ``input_tokens`` tokens each (windows of the dataset's texts run
    together, so the words are real ones; ``None``: the texts as they are), as (text, max_tokens) pairs
    when ``output_tokens`` is set, as ``vllm bench serve``'s random dataset gives; words stand for tokens
    without a ``tokenizer``. The chat template adds a few tokens of its own around each prompt."""
    draw = random.Random(seed)
    stream = encode(tokenizer, "\n".join(texts))
    prompts: List[str] = []
    if input_tokens is None:
        prompts = [texts[k % len(texts)] for k in range(count)]
    else:
        if not stream:
            raise PromptError("the dataset gave no text to make prompts of input_tokens = {}".format(input_tokens))
        for k, length in enumerate(lengths(count, input_tokens, spread, draw)):
            start = draw.randrange(len(stream))
            window = [stream[(start + i) % len(stream)] for i in range(length)]
            prompts.append(" ".join(window) if tokenizer is None else tokenizer.decode(window))
    if output_tokens is None:
        return list(prompts)
    return list(zip(prompts, lengths(count, output_tokens, spread, draw)))
