"""The causal language model the local server decodes with: a LLaMA (transformers'
``LlamaForCausalLM``), its tokenizer, the chat template, and one forward step over a batch of
sequences whose key/value caches have different lengths.

The caches are kept here as plain tensors, one (keys, values) pair per layer, each
``[batch, heads, length, head_dim]`` and padded on the left; a mask of ``[batch, length]``
says which positions are real. Keeping them as tensors (not as a transformers cache object)
lets the engine add a sequence to a running batch and drop a finished one between steps,
whatever the cache classes of the installed transformers version look like.

Chat template (a simple one, not any vendor's): each message becomes ``<|role|>\\n`` then its
content then ``\\n``, and the prompt ends with ``<|assistant|>\\n``::

    <|system|>
    You are terse.
    <|user|>
    What is a KV cache?
    <|assistant|>
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

import torch

__all__ = ["ChatModel", "Cache", "load_model", "apply_chat_template", "ROLES"]

#: The roles a chat message may have (OpenAI's, less tools).
ROLES = ("system", "developer", "user", "assistant")

#: One (keys, values) pair per layer, each [batch, heads, length, head_dim].
Cache = List[Tuple[torch.Tensor, torch.Tensor]]


def apply_chat_template(messages: Sequence[dict]) -> str:
    """The prompt text for chat ``messages`` (dicts with ``role`` and string ``content``)."""
    parts = ["<|{}|>\n{}\n".format(m["role"], m["content"]) for m in messages]
    return "".join(parts) + "<|assistant|>\n"


def _cache_object(cache: Optional[Cache]) -> Any:
    """A transformers cache holding ``cache`` (None: an empty one), for this transformers version."""
    from transformers import DynamicCache

    if cache is None:
        return DynamicCache()
    if hasattr(DynamicCache, "from_legacy_cache"):  # transformers 4.36 to 4.5x
        return DynamicCache.from_legacy_cache(tuple(cache))
    return DynamicCache(ddp_cache_data=cache)


def _cache_tensors(cache: Any) -> Cache:
    """The (keys, values) tensors of a transformers cache object, per layer."""
    if hasattr(cache, "layers"):  # transformers 5
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "to_legacy_cache"):
        return [tuple(pair) for pair in cache.to_legacy_cache()]  # type: ignore[misc]
    return [tuple(pair) for pair in cache]  # type: ignore[misc]


@dataclass
class ChatModel:
    """A tokenizer and a ``LlamaForCausalLM`` in eval mode on the CPU.

    ``name`` is the model id the server lists under ``/v1/models``; ``eos_id`` ends a completion.
    """

    name: str
    model: Any
    tokenizer: Any
    eos_id: Optional[int]
    context_length: int
    description: str

    def encode(self, text: str) -> List[int]:
        return list(self.tokenizer.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids))

    @torch.inference_mode()
    def prefill(self, ids: Sequence[int]) -> Tuple[torch.Tensor, Cache]:
        """The next-token logits ``[vocab]`` after the prompt ``ids``, and its cache (batch of 1)."""
        input_ids = torch.tensor([list(ids)], dtype=torch.long)
        out = self.model(input_ids=input_ids, past_key_values=_cache_object(None), use_cache=True)
        return out.logits[0, -1].float(), _cache_tensors(out.past_key_values)

    @torch.inference_mode()
    def decode_step(self, tokens: torch.Tensor, positions: torch.Tensor, cache: Cache,
                    mask: torch.Tensor) -> Tuple[torch.Tensor, Cache]:
        """One token for each of a batch of sequences: ``tokens`` and ``positions`` are ``[batch]``,
        ``mask`` is ``[batch, length]`` over ``cache`` (0 where a row is left padding).
        Returns the logits ``[batch, vocab]`` and the cache one position longer."""
        attention = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        out = self.model(input_ids=tokens[:, None], position_ids=positions[:, None], attention_mask=attention,
                         past_key_values=_cache_object(cache), use_cache=True)
        return out.logits[:, -1].float(), _cache_tensors(out.past_key_values)


class _ByteTokenizer:
    """Placeholder until labkit.llm's tokenizer is merged: UTF-8 bytes, 256 ids plus end of text."""

    vocab_size = 257
    eos_id = 256

    def encode(self, text: str) -> List[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


_SIZES = {
    "tiny": dict(hidden_size=64, intermediate_size=172, num_hidden_layers=2, num_attention_heads=4),
    "small": dict(hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=8),
}


def load_model(model_size: str = "tiny", model_dir: Optional[str] = None, seed: int = 0) -> ChatModel:
    """The model the server decodes with: ``model_dir`` (a ``save_pretrained`` directory) when
    given, else a LLaMA of ``model_size`` initialised from ``seed`` (random weights: the text is
    noise, but the work per token, and so the timings, are a real model's)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = _ByteTokenizer()
    torch.manual_seed(seed)
    if model_dir is not None:
        path = Path(model_dir)
        if not (path / "config.json").is_file():
            raise FileNotFoundError("model_dir={!r}: no config.json there (a save_pretrained directory is "
                                    "needed)".format(model_dir))
        model = LlamaForCausalLM.from_pretrained(str(path))
        name = "local/" + path.name
        description = "weights from {}".format(path)
    else:
        if model_size not in _SIZES:
            raise ValueError("model_size={!r}: not one of {}".format(model_size, sorted(_SIZES)))
        config = LlamaConfig(vocab_size=tokenizer.vocab_size, max_position_embeddings=2048,
                             eos_token_id=tokenizer.eos_id, bos_token_id=None, pad_token_id=None,
                             **_SIZES[model_size])
        model = LlamaForCausalLM(config)
        name = "labkit-llama-{}".format(model_size)
        description = "LLaMA {} with random weights (seed {})".format(model_size, seed)
    model.eval()
    return ChatModel(name=name, model=model, tokenizer=tokenizer, eos_id=tokenizer.eos_id,
                     context_length=int(model.config.max_position_embeddings), description=description)
