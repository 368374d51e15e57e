"""LLaMA model presets: the sizes the exercises train, their ``LlamaConfig`` and a seeded model.

"7b" is LLaMA-2-7B as the modelzoo's ``params_llama2_7b.yaml`` configures it; the smaller presets keep
its architecture and shrink its dimensions (docs/cerebras.md, "Model").
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from labkit.bert.presets import count_parameters, seeded
from labkit.errors import LabkitError

__all__ = ["MODEL_SIZES", "LLAMA2_VOCAB_SIZE", "ModelTooLarge", "model_config", "build_model", "count_parameters",
           "parameter_count", "training_bytes", "available_memory_bytes"]

#: LLaMA-2's SentencePiece vocabulary (the modelzoo's ``vocab_size: 32000``).
LLAMA2_VOCAB_SIZE = 32000

#: Presets: layers, hidden size, attention heads, feed-forward size, maximum positions.
MODEL_SIZES: Dict[str, Dict[str, int]] = {
    "7b": {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 11008,
           "max_position_embeddings": 4096},
    "small": {"num_hidden_layers": 6, "hidden_size": 384, "num_attention_heads": 6, "intermediate_size": 1024,
              "max_position_embeddings": 1024},
    "tiny": {"num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 4, "intermediate_size": 352,
             "max_position_embeddings": 512},
}

class ModelTooLarge(LabkitError, MemoryError):
    """The model would not fit in this machine's memory to train."""


def _check_size(model_size: str) -> Dict[str, int]:
    try:
        return MODEL_SIZES[model_size]
    except KeyError:
        raise ValueError("model_size = {!r} is not a LLaMA preset; allowed: {}".format(
            model_size, ", ".join(MODEL_SIZES))) from None


def model_config(model_size: str = "tiny", vocab_size: Optional[int] = None, max_seq_length: Optional[int] = None):
    """The ``transformers.LlamaConfig`` of a preset. ``vocab_size`` defaults to LLaMA-2's 32,000;
    ``max_seq_length`` longer than the preset's positions raises them (rotary positions have no
    learnt table, so only the config's limit changes)."""
    from transformers import LlamaConfig

    preset = dict(_check_size(model_size))
    if max_seq_length is not None:
        if max_seq_length < 2:
            raise ValueError("max_seq_length = {}: a causal LM needs at least 2 tokens".format(max_seq_length))
        preset["max_position_embeddings"] = max(preset["max_position_embeddings"], max_seq_length)
    return LlamaConfig(
        vocab_size=vocab_size or LLAMA2_VOCAB_SIZE,
        num_key_value_heads=preset["num_attention_heads"],  # LLaMA-2-7B has no grouped-query attention
        hidden_act="silu",
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        attention_bias=False,
        attention_dropout=0.0,
        tie_word_embeddings=False,
        initializer_range=0.02,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
        **preset,
    )


def parameter_count(model_size: str, vocab_size: Optional[int] = None) -> int:
    """The parameters of a preset, computed from its dimensions (nothing is allocated)."""
    preset = _check_size(model_size)
    vocab = vocab_size or LLAMA2_VOCAB_SIZE
    hidden, ffn, layers = preset["hidden_size"], preset["intermediate_size"], preset["num_hidden_layers"]
    per_layer = 4 * hidden * hidden + 3 * hidden * ffn + 2 * hidden  # attention, SwiGLU, two RMSNorms
    return layers * per_layer + 2 * vocab * hidden + hidden  # untied embedding and output, final norm


def training_bytes(model_size: str, vocab_size: Optional[int] = None) -> int:
    """Memory to train a preset with AdamW in float32: 16 bytes a parameter (weight, gradient, moments)."""
    return 16 * parameter_count(model_size, vocab_size)


def available_memory_bytes() -> Optional[int]:
    """This machine's physical memory, or None where it cannot be read."""
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:  # no psutil, or a platform it cannot read
        import os

        try:
            return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            return None


def build_model(model_size: str = "tiny", vocab_size: Optional[int] = None, max_seq_length: Optional[int] = None,
                seed: int = 0, memory_bytes: Optional[int] = None, device: Any = None) -> Any:
    """A randomly initialised ``LlamaForCausalLM`` of the preset ``model_size`` (the same weights
    for the same seed, whatever the caller's random state). Refuses with :class:`ModelTooLarge`
    when training it would need more than ``memory_bytes`` (default: this machine's memory).
    ``device``: build it there directly (a GPU: LLaMA-2-7B's 27 GB of weights never pass through
    host memory); None builds on the CPU."""
    import torch
    from transformers import LlamaForCausalLM

    config = model_config(model_size, vocab_size, max_seq_length)
    needed = training_bytes(model_size, vocab_size)
    memory = available_memory_bytes() if memory_bytes is None else memory_bytes
    if memory is not None and needed > memory:
        raise ModelTooLarge(
            "model_size = {!r}: training its {:.2g} parameters with AdamW needs about {:.0f} GiB (weights, gradients "
            "and moments in float32), more than this machine's {:.0f} GiB; allowed here: {}".format(
                model_size, parameter_count(model_size, vocab_size), needed / 2**30, memory / 2**30,
                ", ".join(size for size in MODEL_SIZES if training_bytes(size, vocab_size) <= memory) or "none"))
    with seeded(seed):
        if device is None or torch.device(device).type == "cpu":
            model = LlamaForCausalLM(config)
        else:
            torch.manual_seed(seed)  # seeds the GPU's generator too (the caller's CPU state is restored)
            with torch.device(device):
                model = LlamaForCausalLM(config)
    return model
