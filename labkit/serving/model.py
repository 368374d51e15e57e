"""The local server's LLaMA (transformers' ``LlamaForCausalLM``) and tokenizer, and one forward step
over a batch of sequences whose key/value caches have different lengths. The caches are plain tensors
(``Cache``), padded on the left with a ``[batch, length]`` mask, so the engine can add and drop
sequences between steps whatever the installed transformers version's cache classes look like.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

import torch

__all__ = ["ChatModel", "Cache", "load_model", "VOCAB_SIZE"]

#: One (keys, values) pair per layer, each [batch, heads, length, head_dim].
Cache = List[Tuple[torch.Tensor, torch.Tensor]]


def _cache_keyword(model: Any) -> str:
    """The name ``model.forward`` takes its cache under: ``cache`` from transformers 5.24 on
    (``past_key_values`` warns there and goes in 5.40), ``past_key_values`` before (4.40 to 5.23)."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _returned_cache(out: Any) -> Any:
    """The cache a forward pass returned: ``out.cache`` where the output has that field (transformers
    5.24 on, where ``past_key_values`` is a deprecated alias), else ``out.past_key_values``."""
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


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
    """A tokenizer and a ``LlamaForCausalLM`` in eval mode on the CPU; ``name``: the id /v1/models lists."""

    name: str
    model: Any
    tokenizer: Any
    eos_id: Optional[int]
    context_length: int
    description: str

    def __post_init__(self) -> None:
        self._cache_keyword = _cache_keyword(self.model)

    def encode(self, text: str) -> List[int]:
        return list(self.tokenizer.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    @torch.inference_mode()
    def prefill(self, ids: Sequence[int]) -> Tuple[torch.Tensor, Cache]:
        """The next-token logits ``[vocab]`` after the prompt ``ids``, and its cache (batch of 1)."""
        input_ids = torch.tensor([list(ids)], dtype=torch.long)
        out = self.model(input_ids=input_ids, use_cache=True, **{self._cache_keyword: _cache_object(None)})
        return out.logits[0, -1].float(), _cache_tensors(_returned_cache(out))

    @torch.inference_mode()
    def decode_step(self, tokens: torch.Tensor, positions: torch.Tensor, cache: Cache,
                    mask: torch.Tensor) -> Tuple[torch.Tensor, Cache]:
        """One token for each of a batch of sequences: ``tokens`` and ``positions`` are ``[batch]``,
        ``mask`` is ``[batch, length]`` over ``cache`` (0 where a row is left padding).
        Returns the logits ``[batch, vocab]`` and the cache one position longer."""
        attention = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        out = self.model(input_ids=tokens[:, None], position_ids=positions[:, None], attention_mask=attention,
                         use_cache=True, **{self._cache_keyword: _cache_object(cache)})
        return out.logits[:, -1].float(), _cache_tensors(_returned_cache(out))


#: The tokenizer's vocabulary (labkit.llm's byte-level BPE, trained on the offline corpus).
VOCAB_SIZE = 2048


def load_model(model_size: str = "tiny", model_dir: Optional[str] = None, seed: int = 0) -> ChatModel:
    """The model the server decodes with: ``model_dir`` (a ``save_pretrained`` directory) when
    given, else labkit.llm's LLaMA preset ``model_size`` initialised from ``seed`` (random
    weights: the text is noise, but the work per token, and so the timings, are a real model's).
    The tokenizer is the model directory's own when it has one, else labkit.llm's corpus tokenizer."""
    from labkit import llm

    path = None if model_dir is None else Path(model_dir)
    if path is not None and not (path / "config.json").is_file():
        raise FileNotFoundError("model_dir={!r}: no config.json there (a save_pretrained directory is "
                                "needed)".format(model_dir))
    if path is None and model_size not in llm.MODEL_SIZES:
        raise ValueError("model_size={!r}: not one of {}".format(model_size, sorted(llm.MODEL_SIZES)))
    if path is not None and (path / "tokenizer.json").is_file():
        tokenizer = llm.load_tokenizer(path / "tokenizer.json")
    else:
        tokenizer = llm.corpus_tokenizer(llm.load_corpus(), vocab_size=VOCAB_SIZE)
    if path is not None:
        from transformers import LlamaForCausalLM

        model = LlamaForCausalLM.from_pretrained(str(path))
        name = "local/" + path.name
        description = "LLaMA from {}".format(path)
    else:
        model = llm.build_model(model_size, vocab_size=len(tokenizer), seed=seed)
        name = "labkit-llama-{}".format(model_size)
        description = "LLaMA {} ({:,} parameters), random weights (seed {})".format(
            model_size, llm.count_parameters(model), seed)
    if len(tokenizer) > model.config.vocab_size:
        raise ValueError("the tokenizer has {} tokens, the model only {}".format(len(tokenizer),
                                                                                model.config.vocab_size))
    model.eval()
    return ChatModel(name=name, model=model, tokenizer=tokenizer, eos_id=tokenizer.eos_token_id,
                     context_length=int(model.config.max_position_embeddings), description=description)
