"""Small LLaMA language models trained offline: shared by the Cerebras LLaMA-2-7B exercise and
labkit's local inference server.

    from labkit import llm
    corpus = llm.load_corpus()                               # English text that ships with Python
    tokenizer = llm.corpus_tokenizer(corpus, vocab_size=2048)  # byte-level BPE, trained once, cached
    model = llm.build_model("tiny", vocab_size=len(tokenizer), seed=0)   # transformers.LlamaForCausalLM
    ids = llm.encode_text(tokenizer, corpus.train)
    batch = next(llm.token_batches(ids, batch_size=8, sequence_length=128, seed=0))
    model(**batch).loss

The modules: docs/cerebras.md, "Code" of the LLaMA-2-7B exercise.
"""

from __future__ import annotations

from labkit.llm.device_plan import (LlamaStepPlan, NothingFitsHere, flops_per_token, plan_llama,
                                   training_memory_bytes)
from labkit.llm.corpus import (OFFLINE_CORPUS, Corpus, CorpusUnavailable, encode_text, load_corpus,
                               split_documents, token_batches)
from labkit.llm.presets import (LLAMA2_VOCAB_SIZE, MODEL_SIZES, ModelTooLarge, available_memory_bytes, build_model,
                                count_parameters, model_config, parameter_count, training_bytes)
from labkit.llm.training import MAX_GRAD_NORM, make_optimizer, train_step, warmup_scheduler
from labkit.llm.tokenizer import BOS, EOS, UNK, corpus_tokenizer, load_tokenizer, train_tokenizer, wrap_tokenizer

__all__ = [
    "OFFLINE_CORPUS", "Corpus", "CorpusUnavailable", "load_corpus", "split_documents", "encode_text",
    "token_batches",
    "BOS", "EOS", "UNK", "train_tokenizer", "wrap_tokenizer", "corpus_tokenizer", "load_tokenizer",
    "MODEL_SIZES", "LLAMA2_VOCAB_SIZE", "ModelTooLarge", "model_config", "build_model", "count_parameters",
    "parameter_count", "training_bytes", "available_memory_bytes",
    "make_optimizer", "warmup_scheduler", "train_step", "MAX_GRAD_NORM",
    "LlamaStepPlan", "NothingFitsHere", "plan_llama", "flops_per_token", "training_memory_bytes",
]
