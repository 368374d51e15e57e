"""Portable BERT pre-training (masked LM + next sentence) for the Cerebras and SambaNova exercises.

The testbeds train BERT-Large with their own stacks; this module trains the same model
(Hugging Face ``transformers.BertForPreTraining``, random initialisation, no hub access) on
CUDA, Apple MPS or CPU, so the exercises run and report the same metrics anywhere.

    from labkit import bert
    model = bert.build_model("tiny", max_seq_length=128, seed=0)
    batches = bert.synthetic_batches(8, 128, model.config.vocab_size, seed=0)
    result = bert.train(model, batches, steps=20, log_steps=10, device="cpu")
    result.global_rate, result.losses[-1]

Or one step at a time (the SambaNova data-parallel path drives its own loop):

    optimizer = bert.make_optimizer(model, learning_rate=1e-4)
    loss = bert.train_step(model, next(batches), optimizer, device)   # a detached tensor

Throughput follows the Cerebras modelzoo's definitions (its ``RateTracker``, inherited from
torch_xla): ``Rate`` is the samples/s over the last log window, exponentially smoothed with
the previous reported rate (0.6 x this window + 0.4 x the last report); ``GlobalRate`` is all
samples since the first step divided by all the time since then. :class:`RateTracker`
implements exactly that; ``tests/bert`` checks it against the rates printed in real CS-2 logs.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

__all__ = [
    "MODEL_SIZES",
    "BERT_VOCAB_SIZE",
    "build_model",
    "model_config",
    "count_parameters",
    "synthetic_batches",
    "make_optimizer",
    "pretraining_loss",
    "train_step",
    "train",
    "RateTracker",
    "LogEntry",
    "TrainResult",
]

#: The uncased BERT WordPiece vocabulary size (the modelzoo's bert_large configs use it too).
BERT_VOCAB_SIZE = 30522

#: Model presets: layers, hidden size, attention heads, feed-forward size (and vocabulary
#: where it differs from BERT's). "large" is the BERT-Large the testbeds train.
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

# Special token ids. With BERT's vocabulary these are its real ids ([PAD] 0, [CLS] 101, [SEP]
# 102, [MASK] 103; ordinary WordPieces start at 1996). Small vocabularies use 0-3.
_BERT_SPECIAL = {"pad": 0, "cls": 101, "sep": 102, "mask": 103, "first_word": 1996}
_SMALL_SPECIAL = {"pad": 0, "cls": 1, "sep": 2, "mask": 3, "first_word": 4}


def _special_ids(vocab_size: int) -> Dict[str, int]:
    return _BERT_SPECIAL if vocab_size >= 4 * _BERT_SPECIAL["first_word"] else _SMALL_SPECIAL


def _check_size(model_size: str) -> Dict[str, int]:
    try:
        return MODEL_SIZES[model_size]
    except KeyError:
        raise ValueError("model_size={!r} is not a BERT preset; choose one of {}".format(
            model_size, ", ".join(MODEL_SIZES))) from None


def model_config(model_size: str = "large", max_seq_length: int = 128, vocab_size: Optional[int] = None):
    """The ``transformers.BertConfig`` of a preset (dropout 0.1, GELU, as BERT and the modelzoo)."""
    from transformers import BertConfig

    preset = dict(_check_size(model_size))
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
def _seeded(seed: int):
    """Seed torch's global generator for a block, then put the caller's state back."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def build_model(model_size: str = "large", max_seq_length: int = 128, seed: int = 0,
                vocab_size: Optional[int] = None):
    """A randomly initialised ``BertForPreTraining`` of the preset ``model_size``.

    The same ``seed`` gives the same weights; nothing is downloaded.
    """
    from transformers import BertForPreTraining

    config = model_config(model_size, max_seq_length, vocab_size)
    with _seeded(seed):
        model = BertForPreTraining(config)
    return model


def count_parameters(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def synthetic_batches(batch_size: int, max_seq_length: int = 128, vocab_size: int = BERT_VOCAB_SIZE,
                      seed: int = 0, mask_prob: float = 0.15, max_predictions: Optional[int] = None,
                      short_seq_prob: float = 0.1, num_batches: Optional[int] = None,
                      topics: int = 16) -> Iterator[Dict[str, Any]]:
    """Masked-LM + next-sentence batches of synthetic text, the same for the same ``seed``.

    Each sequence is ``[CLS] A [SEP] B [SEP]`` padded to ``max_seq_length`` (shorter with
    probability ``short_seq_prob``, as BERT's data preparation does). Words follow a Zipf
    law within a "topic"; B continues A's topic when ``next_sentence_label`` is 0 (IsNext)
    and comes from another topic when it is 1, so both objectives have something to learn.
    ``mask_prob`` of the words (at most ``max_predictions`` per sequence, 20 for length 128
    as in the modelzoo's MSL128 data) are chosen; of those 80% become [MASK], 10% a random
    word, 10% stay. ``labels`` hold the original word there and -100 everywhere else.

    Yields dicts of CPU tensors: input_ids, token_type_ids, attention_mask (int64, shape
    batch x length), labels (same), next_sentence_label (batch). Endless unless
    ``num_batches`` is given.
    """
    import torch

    if batch_size < 1:
        raise ValueError("batch_size={} must be at least 1".format(batch_size))
    length = max_seq_length
    if length < 8:
        raise ValueError("max_seq_length={} is too short; use 8 or more".format(length))
    ids = _special_ids(vocab_size)
    first = ids["first_word"]
    words = vocab_size - first
    if words < 2 * topics:
        raise ValueError("vocab_size={} leaves too few ordinary words".format(vocab_size))
    if max_predictions is None:
        max_predictions = max(1, int(round(length * mask_prob)))
    gen = torch.Generator().manual_seed(int(seed))
    # Zipf over word ranks; a topic shifts which words are frequent.
    zipf = 1.0 / torch.arange(1, words + 1, dtype=torch.float64)
    zipf = (zipf / zipf.sum()).float()
    positions = torch.arange(length)
    made = 0
    while num_batches is None or made < num_batches:
        made += 1
        b = batch_size
        # Lengths: total real tokens and the split between A and B.
        total = torch.full((b,), length, dtype=torch.long)
        short = torch.rand(b, generator=gen) < short_seq_prob
        total[short] = torch.randint(8, length + 1, (int(short.sum()),), generator=gen)
        words_in_row = total - 3
        len_a = 1 + (torch.rand(b, generator=gen) * (words_in_row - 1).float()).to(torch.int64)
        sep1 = len_a + 1
        end = total - 1  # the final [SEP]
        # Topics and the next-sentence label (0 = B follows A, 1 = B is random).
        topic_a = torch.randint(0, topics, (b,), generator=gen)
        nsp = torch.randint(0, 2, (b,), generator=gen)
        other = (topic_a + torch.randint(1, topics, (b,), generator=gen)) % topics
        topic_b = torch.where(nsp == 0, topic_a, other)
        ranks = torch.multinomial(zipf, b * length, replacement=True, generator=gen).view(b, length)
        pos = positions.unsqueeze(0)
        in_b = pos > sep1.unsqueeze(1)
        topic = torch.where(in_b, topic_b.unsqueeze(1), topic_a.unsqueeze(1))
        tokens = first + (ranks + topic * (words // topics)) % words
        tokens[:, 0] = ids["cls"]
        is_sep = (pos == sep1.unsqueeze(1)) | (pos == end.unsqueeze(1))
        tokens = torch.where(is_sep, torch.full_like(tokens, ids["sep"]), tokens)
        is_pad = pos >= total.unsqueeze(1)
        tokens = torch.where(is_pad, torch.full_like(tokens, ids["pad"]), tokens)
        attention_mask = (~is_pad).to(torch.int64)
        token_type_ids = (in_b & ~is_pad).to(torch.int64)
        # Masked-LM choice: a random ranking of the word positions, keep the first n per row.
        is_word = (pos > 0) & ~is_sep & ~is_pad
        scores = torch.rand(b, length, generator=gen).masked_fill(~is_word, 2.0)
        rank = scores.argsort(dim=1).argsort(dim=1)
        n_mask = (words_in_row.float() * mask_prob).round().to(torch.int64).clamp(1, max_predictions)
        chosen = is_word & (rank < n_mask.unsqueeze(1))
        labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))
        action = torch.rand(b, length, generator=gen)
        random_words = torch.randint(first, vocab_size, (b, length), generator=gen)
        input_ids = torch.where(chosen & (action < 0.8), torch.full_like(tokens, ids["mask"]), tokens)
        input_ids = torch.where(chosen & (action >= 0.8) & (action < 0.9), random_words, input_ids)
        yield {
            "input_ids": input_ids,
            "token_type_ids": token_type_ids,
            "attention_mask": attention_mask,
            "labels": labels,
            "next_sentence_label": nsp,
        }


def make_optimizer(model: Any, learning_rate: float = 1e-4, weight_decay: float = 0.01):
    """AdamW, as the modelzoo's BERT configs use; no decay on biases and LayerNorm weights."""
    import torch

    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(param)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=learning_rate)


def _to_device(batch: Mapping[str, Any], device: Any) -> Dict[str, Any]:
    non_blocking = getattr(device, "type", str(device)) == "cuda"
    return {k: v.to(device, non_blocking=non_blocking) for k, v in batch.items()}


def pretraining_loss(model: Any, batch: Mapping[str, Any]):
    """Masked-LM + next-sentence loss of a ``BertForPreTraining``, as its ``forward`` defines it.

    The same value as ``model(**batch).loss``, but the vocabulary-sized output layer runs
    only at the masked positions (about 15% of them), as the modelzoo's BERT and NVIDIA's
    do: ``BertForPreTraining.forward`` scores every position of every sequence, which on
    small models costs more than the encoder itself.
    """
    import torch.nn.functional as F

    out = model.bert(batch["input_ids"], attention_mask=batch["attention_mask"],
                     token_type_ids=batch["token_type_ids"], return_dict=True)
    sequence_output, pooled_output = out[0], out[1]
    labels = batch["labels"]
    chosen = labels != -100
    scores = model.cls.predictions(sequence_output[chosen])
    mlm = F.cross_entropy(scores, labels[chosen])
    nsp = F.cross_entropy(model.cls.seq_relationship(pooled_output), batch["next_sentence_label"].view(-1))
    return mlm + nsp


def train_step(model: Any, batch: Mapping[str, Any], optimizer: Any, device: Any = "cpu",
               micro_batch_size: Optional[int] = None):
    """One optimizer step on ``batch``; returns the loss (MLM + NSP) as a detached tensor.

    With ``micro_batch_size`` the batch is split and gradients are accumulated before the
    single update (what the CS-2 compiler chooses on its own: "Gradient accumulation trying
    sub-batch size ..."), so a large batch fits a small device. The loss is not read back
    to the host here, so a GPU is not forced to wait every step.
    """
    model.train()
    optimizer.zero_grad(set_to_none=True)
    size = int(batch["input_ids"].shape[0])
    micro = size if not micro_batch_size or micro_batch_size >= size else int(micro_batch_size)
    total = None
    for start in range(0, size, micro):
        part = {k: v[start:start + micro] for k, v in batch.items()}
        part = _to_device(part, device)
        share = part["input_ids"].shape[0] / size
        loss = pretraining_loss(model, part)
        loss = loss * share if share != 1 else loss
        loss.backward()
        total = loss.detach() if total is None else total + loss.detach()
    optimizer.step()
    return total


class RateTracker:
    """Samples/s as the Cerebras modelzoo reports them (``Rate`` and ``GlobalRate``).

    ``add(n)`` after each step; ``rate()`` at each log step gives the window's rate smoothed
    with the previous report, ``(1 - s) * window + s * previous`` with ``s = 0.4``;
    ``global_rate()`` is every sample since ``start()`` over the time since then.
    ``clock`` is injectable for tests; ``now`` lets several readings share one instant.
    """

    def __init__(self, smoothing: float = 0.4, clock: Callable[[], float] = time.perf_counter):
        self.smoothing = smoothing
        self.clock = clock
        self.start()

    def start(self) -> None:
        self._start = self.clock()
        self._window_start = self._start
        self._window_count = 0.0
        self._done_count = 0.0
        self._last_rate: Optional[float] = None

    def add(self, count: float) -> None:
        self._window_count += count

    @property
    def count(self) -> float:
        return self._done_count + self._window_count

    def elapsed(self, now: Optional[float] = None) -> float:
        return (self.clock() if now is None else now) - self._start

    def rate(self, now: Optional[float] = None) -> float:
        """The smoothed rate of the window since the last call (ends the window)."""
        now = self.clock() if now is None else now
        delta = now - self._window_start
        if delta <= 0:
            return self._last_rate or 0.0
        current = self._window_count / delta
        smoothed = current if self._last_rate is None else (
            (1 - self.smoothing) * current + self.smoothing * self._last_rate)
        self._done_count += self._window_count
        self._window_count = 0.0
        self._window_start = now
        self._last_rate = smoothed
        return smoothed

    def global_rate(self, now: Optional[float] = None) -> float:
        delta = self.elapsed(now)
        return self.count / delta if delta > 0 else 0.0


@dataclass
class LogEntry:
    """One log line's worth: the step, its loss and the two rates (samples/s)."""

    step: int
    loss: float
    rate: float
    global_rate: float
    elapsed: float


@dataclass
class TrainResult:
    """What :func:`train` measured.

    ``warmup_time`` is the first step alone (graph building, allocator and kernel warm-up,
    the portable analogue of the CS-2's compile); it is part of ``total_time`` too, as the
    modelzoo's "Processed N sample(s) in T seconds" counts from the first step.
    """

    batch_size: int
    steps: int
    device: str
    losses: List[float] = field(default_factory=list)
    step_times: List[float] = field(default_factory=list)
    logs: List[LogEntry] = field(default_factory=list)
    total_samples: int = 0
    total_time: float = 0.0
    warmup_time: float = 0.0
    setup_time: float = 0.0
    interrupted: str = ""  # "interrupted at step 40/1000" when an interrupt ended it early

    @property
    def global_rate(self) -> float:
        return self.total_samples / self.total_time if self.total_time > 0 else 0.0

    @property
    def time_per_sample(self) -> float:
        return self.total_time / self.total_samples if self.total_samples else math.nan

    @property
    def final_loss(self) -> float:
        return self.losses[-1] if self.losses else math.nan


def _sync(device: Any) -> None:
    import torch

    kind = getattr(device, "type", str(device))
    if kind == "cuda":
        torch.cuda.synchronize(device)
    elif kind == "mps" and hasattr(torch, "mps"):
        torch.mps.synchronize()


def train(model: Any, batches: Iterator[Mapping[str, Any]], steps: int, log_steps: int = 100,
          device: Any = "cpu", learning_rate: float = 1e-4, optimizer: Any = None,
          micro_batch_size: Optional[int] = None, seed: Optional[int] = None,
          on_log: Optional[Callable[[LogEntry], None]] = None, progress: Any = True,
          desc: str = "train", stop: Any = None) -> TrainResult:
    """Train ``model`` for ``steps`` steps of ``batches`` and measure it.

    Every ``log_steps`` steps (and at the last step) ``on_log(LogEntry)`` is called with the
    modelzoo's Rate and GlobalRate. ``seed`` fixes dropout. ``progress``: True for a
    :func:`labkit.progress.bar`, False for none, or a bar of your own (anything with
    ``update(n)``), e.g. to print log lines above it with its ``write``. Returns a :class:`TrainResult`
    with every step's loss and time. A non-finite loss stops the run early (the result
    then has fewer steps than asked; check ``len(result.losses)``). ``stop``: a
    :class:`labkit.interrupts.StopRequest`; an interrupt then ends the run at the next step and
    ``result.interrupted`` says where (without it an interrupt propagates).
    """
    import torch

    from labkit.progress import bar

    if steps < 1 or log_steps < 1:
        raise ValueError("steps and log_steps must be at least 1 (got {}, {})".format(steps, log_steps))
    setup_start = time.perf_counter()
    device = torch.device(device) if isinstance(device, str) else device
    model.to(device)
    if optimizer is None:
        optimizer = make_optimizer(model, learning_rate)
    if seed is not None:
        torch.manual_seed(seed)
    result = TrainResult(batch_size=0, steps=steps, device=str(device))
    result.setup_time = time.perf_counter() - setup_start
    tracker = RateTracker()
    pending: List[Any] = []  # losses still on the device, read at log steps
    own_bar = progress is True
    pbar = bar(total=steps, desc=desc, unit="step") if own_bar else (progress or None)
    last_time = tracker.clock()
    try:
        for step in range(1, steps + 1):
            batch = next(batches)
            size = int(batch["input_ids"].shape[0])
            result.batch_size = result.batch_size or size
            loss = train_step(model, batch, optimizer, device, micro_batch_size)
            pending.append(loss)
            tracker.add(size)
            result.total_samples += size
            is_log = step % log_steps == 0 or step == steps
            if step == 1 or is_log:
                _sync(device)
                result.losses.extend(float(x) for x in torch.stack(pending).cpu().tolist())
                pending = []
            now = tracker.clock()
            result.step_times.append(now - last_time)
            last_time = now
            if step == 1:
                result.warmup_time = result.step_times[0]
            if is_log:
                entry = LogEntry(step, result.losses[-1], tracker.rate(now), tracker.global_rate(now),
                                 tracker.elapsed(now))
                result.logs.append(entry)
                if on_log is not None:
                    on_log(entry)
            if pbar is not None:
                pbar.update(1)
            if result.losses and not math.isfinite(result.losses[-1]):
                break
            if stop is not None and stop.requested and step < steps:
                break
    except KeyboardInterrupt as exc:  # a second interrupt: the step in progress is dropped
        if stop is None or not stop.interrupted_by(exc):
            raise
    finally:
        if own_bar and pbar is not None:
            pbar.close()
    result.total_time = tracker.elapsed()
    if pending:  # losses of the steps before an interrupt, not read yet
        _sync(device)
        result.losses.extend(float(x) for x in torch.stack(pending).cpu().tolist())
    if stop is not None and stop.requested and len(result.losses) < steps:
        from labkit.interrupts import where

        result.interrupted = where(step=len(result.losses), steps=steps) if result.losses else where()
    return result
