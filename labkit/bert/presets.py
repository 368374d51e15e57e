"""BERT model presets: the sizes the exercises train, their ``BertConfig`` and a seeded model.

"large" is the BERT-Large the testbeds train; "micro" keeps tests and golden notebooks to
seconds on two CPU cores.
"""

from __future__ import annotations

import contextlib
from typing import Any, Dict, Optional

__all__ = ["BERT_VOCAB_SIZE", "MODEL_SIZES", "model_config", "build_model", "count_parameters", "seeded"]

#: The uncased BERT WordPiece vocabulary size (the modelzoo's bert_large configs use it too).
BERT_VOCAB_SIZE = 30522

#: Model presets: layers, hidden size, attention heads, feed-forward size (and vocabulary
#: where it differs from BERT's).
MODEL_SIZES: Dict[str, Dict[str, int]] = {
    "large": {"num_hidden_layers": 24, "hidden_size": 1024, "num_attention_heads": 16, "intermediate_size": 4096},
    "base": {"num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072},
    "mini": {"num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 1024},
    "tiny": {"num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 2, "intermediate_size": 512},
    # For tests and golden notebooks: seconds on two CPU cores. Its small vocabulary keeps the
    # masked-LM output layer (batch x length x vocab logits) from dominating the cost.
    "micro": {"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64,
              "vocab_size": 1024},
}


def model_config(model_size: str = "large", max_seq_length: int = 128, vocab_size: Optional[int] = None):
    """The ``transformers.BertConfig`` of a preset (dropout 0.1, GELU, as BERT and the modelzoo)."""
    from transformers import BertConfig

    if model_size not in MODEL_SIZES:
        raise ValueError("model_size={!r} is not a BERT preset; choose one of {}".format(
            model_size, ", ".join(MODEL_SIZES)))
    preset = dict(MODEL_SIZES[model_size])
    preset_vocab = preset.pop("vocab_size", BERT_VOCAB_SIZE)
    if max_seq_length < 8:
        raise ValueError("max_seq_length={} is too short for [CLS] A [SEP] B [SEP]; use 8 or more".format(max_seq_length))
    return BertConfig(
        vocab_size=vocab_size or preset_vocab,
        max_position_embeddings=max(512, max_seq_length),
        type_vocab_size=2,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        pad_token_id=0,
        **preset,
    )


@contextlib.contextmanager
def seeded(seed: int):
    """Seed torch's global generator for a block, then put the caller's state back."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def build_model(model_size: str = "large", max_seq_length: int = 128, seed: int = 0,
                vocab_size: Optional[int] = None):
    """A randomly initialised ``BertForPreTraining`` of the preset ``model_size``: the same ``seed``
    gives the same weights; nothing is downloaded."""
    from transformers import BertForPreTraining

    config = model_config(model_size, max_seq_length, vocab_size)
    with seeded(seed):
        return BertForPreTraining(config)


def count_parameters(model: Any) -> int:
    """The number of parameters of a model."""
    return sum(p.numel() for p in model.parameters())
