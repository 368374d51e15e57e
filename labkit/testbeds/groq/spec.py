"""The Groq exercise's parameters: :data:`SPEC`, its defaults and its checks (the model, the
sequence length and the backends against this machine, before anything runs)."""

from __future__ import annotations

from typing import List, Optional, Tuple

from labkit.params import Config, Param, PATH, Spec, existing_file
from labkit.testbeds.groq import backends, models

__all__ = ["SPEC", "EXERCISE", "SIMILARITY_TOLERANCE", "MAX_CUSTOM"]

EXERCISE = "groq/bert_tiny"
#: Similarity scores further apart than this between a backend and the CPU count as a disagreement.
SIMILARITY_TOLERANCE = 0.01
MAX_CUSTOM = 20


def _check_backends(value: str) -> Optional[str]:
    try:
        backends.parse_backends(value)
    except ValueError as exc:
        return str(exc)
    return None


def _check_custom(value: List[str]) -> Optional[str]:
    if not value:
        return "an empty list; give at least one sentence, or None"
    if len(value) > MAX_CUSTOM:
        return "{} sentences; at most {} are run".format(len(value), MAX_CUSTOM)
    if any(not s.strip() for s in value):
        return "an empty sentence in the list"
    return None


def _cross_length(config: Config) -> Optional[Tuple[str, str]]:
    limit = models.model_limit(config.model)
    if limit is not None and config.max_seq_length > limit:
        return "max_seq_length", "{} accepts at most {} tokens (its max_position_embeddings)".format(config.model, limit)
    return None


def _cross_custom(config: Config) -> Optional[Tuple[str, str]]:
    pairs = models.COURSE_MODELS.get(config.model) == "similarity"
    if config.custom_text is not None and pairs and len(config.custom_text) < 2:
        return "custom_text", "sentence similarity compares sentences in pairs: give at least 2 sentences"
    return None


def _cross_backends(config: Config) -> Optional[Tuple[str, str]]:
    try:
        backends.resolve_backends(config.backends)
    except ValueError as exc:
        return "backends", str(exc)
    return None


SPEC = Spec(
    EXERCISE,
    Param("model", str, "M-FAC/bert-tiny-finetuned-sst2", check=models.problem_with_model,
          help="Hugging Face model id or local directory: the BERT-tiny SST-2 checkpoint (spring) or "
               "sentence-transformers/all-MiniLM-L6-v2 (autumn, sentence similarity on STS-B)"),
    Param("max_seq_length", int, 128, min=2, help="tokens per sentence; the compiled shape"),
    Param("batch_size", int, 1, min=1, max=256, help="samples per inference (the proof point uses 1)"),
    Param("num_samples", int, None, optional=True, min=1, help="evaluate the first N samples; None = all"),
    Param("custom_text", list, None, optional=True, item_type=str, check=_check_custom,
          help="your own sentences, run on every backend"),
    Param("backends", str, "auto", check=_check_backends,
          help="'auto' or a comma list of cpu, onnxruntime, cuda, groq"),
    Param("log_path", PATH, None, optional=True, check=existing_file, help="a GroqFlow log from the testbed to read"),
    checks=[_cross_length, _cross_custom, _cross_backends],
)
