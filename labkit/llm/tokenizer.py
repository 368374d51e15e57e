"""A byte-level BPE tokenizer trained offline on a corpus, cached, as a ``transformers`` tokenizer.

Training one takes well under a second. LLaMA-2's own 32,000-piece tokenizer is on the hub, out of an
offline laptop's reach, and its output layer would dominate a small model; why this one and how it is
cached: docs/cerebras.md, "Tokenizer".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from labkit.data.cache import cache_dir
from labkit.files import write_atomic

__all__ = ["BOS", "EOS", "UNK", "SPECIAL_TOKENS", "train_tokenizer", "wrap_tokenizer", "corpus_tokenizer",
           "tokenizer_path", "load_tokenizer"]

UNK, BOS, EOS = "<unk>", "<s>", "</s>"  # LLaMA's names; ids 0, 1, 2 as in LLaMA-2's tokenizer
SPECIAL_TOKENS = (UNK, BOS, EOS)

#: Bump when the recipe below changes, so cached tokenizers are trained again.
_RECIPE_VERSION = 1

MIN_VOCAB, MAX_VOCAB = 300, 65536  # 256 bytes + the special tokens is the least a byte-level BPE needs


def _check_vocab(vocab_size: int) -> None:
    if not isinstance(vocab_size, int) or not MIN_VOCAB <= vocab_size <= MAX_VOCAB:
        raise ValueError("vocab_size = {!r}: allowed an integer from {} (the 256 bytes, the special tokens and a few "
                         "merges) to {}".format(vocab_size, MIN_VOCAB, MAX_VOCAB))


def train_tokenizer(texts: Iterable[str], vocab_size: int = 2048) -> Any:
    """A ``tokenizers.Tokenizer``: byte-level BPE with ``vocab_size`` tokens trained on ``texts``;
    a ``<s>`` is put before every encoded text, as LLaMA's tokenizer does."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    _check_vocab(vocab_size)
    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(list(texts), trainer=trainer)
    bos = tokenizer.token_to_id(BOS)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="{} $A".format(BOS), pair="{} $A {} $B".format(BOS, BOS), special_tokens=[(BOS, bos)])
    return tokenizer


def wrap_tokenizer(tokenizer: Any) -> Any:
    """A ``transformers.PreTrainedTokenizerFast`` around a trained ``tokenizers.Tokenizer``
    (``</s>`` doubles as the padding token, as is usual for LLaMA)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=BOS, eos_token=EOS, unk_token=UNK,
                                   pad_token=EOS, clean_up_tokenization_spaces=False)


def tokenizer_path(fingerprint: str, vocab_size: int) -> Path:
    """Where the tokenizer of a corpus (by its fingerprint) and a vocabulary size is cached, for
    the installed ``tokenizers``: its file format changes between versions (0.20 writes merges
    that 0.19 cannot read), and the cache directory is shared by every environment of a user."""
    import tokenizers

    return cache_dir() / "tokenizers" / "bpe-v{}-{}-{}-tokenizers{}.json".format(
        _RECIPE_VERSION, fingerprint, vocab_size, tokenizers.__version__)


def load_tokenizer(path: Path) -> Any:
    """The ``PreTrainedTokenizerFast`` of a tokenizer file written by :func:`corpus_tokenizer`."""
    from tokenizers import Tokenizer

    return wrap_tokenizer(Tokenizer.from_file(str(path)))


def corpus_tokenizer(corpus: Any, vocab_size: int = 2048) -> Any:
    """The tokenizer of ``corpus`` (a :class:`labkit.llm.Corpus`), trained on its training text
    once and then read from the cache."""
    from filelock import FileLock

    _check_vocab(vocab_size)
    path = tokenizer_path(corpus.fingerprint, vocab_size)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            if not path.is_file():  # another process may have built it while we waited
                tokenizer = train_tokenizer(corpus.train.split("\n\n"), vocab_size)
                write_atomic(path, tokenizer.to_str())
    return load_tokenizer(path)
