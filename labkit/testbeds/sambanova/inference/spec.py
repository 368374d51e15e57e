"""The inference exercise's parameters: the endpoints to compare, the prompts, how they are sent;
``ENDPOINTS`` and the renamed models are docs/sambanova.md's "The service in 2026".
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, Optional, Sequence, Tuple

from labkit.params import PATH, Config, Param, Spec, existing_file

__all__ = ["SPEC", "EXERCISE", "ENDPOINTS", "LOCAL", "is_local", "local_configuration",
           "RENAMED", "current_model", "weights_of", "several_models",
           "GATEWAY", "targets_of"]

EXERCISE = "sambanova/inference"
#: A base URL that starts the local stand-in server in one of its configurations ("local:batched").
LOCAL = "local"

#: The ALCF inference service's gateway; each cluster is /resource_server/<cluster>/... below it.
GATEWAY = "https://inference-api.alcf.anl.gov/resource_server"

#: The ALCF endpoints as argonne-lcf/user-guides (docs/services/inference-endpoints.md) lists them in
#: 2026; "serves" is what the guide listed, not a promise: ``access.list_models`` asks the endpoint.
ENDPOINTS: Dict[str, Dict[str, Any]] = {
    "metis": {"base_url": GATEWAY + "/metis/api/v1", "model": "gpt-oss-120b",
              "server": "SambaNova SN40L (Metis), SambaNova API",
              "serves": ["gpt-oss-120b", "Mistral-Large-3-675B-Instruct-2512", "gemma-4-31B-it"]},
    "sophia": {"base_url": GATEWAY + "/sophia/vllm/v1", "model": "openai/gpt-oss-120b",
               "server": "vLLM on Sophia (NVIDIA A100 GPUs)",
               "serves": ["openai/gpt-oss-120b", "openai/gpt-oss-20b", "google/gemma-4-31B-it",
                          "meta-llama/Llama-4-Maverick-17B-128E-Instruct", "meta-llama/Meta-Llama-3.1-8B-Instruct"]},
    "minerva": {"base_url": GATEWAY + "/minerva/api/v1", "model": "nemotron-3-ultra",
                "server": "Minerva (NVIDIA B200 GPUs)", "serves": ["nemotron-3-ultra", "inkling-bf16"]},
}

#: Served names that changed: old name -> (today's name, where and when, in words).
RENAMED: Dict[str, Tuple[str, str]] = {
    "gpt-oss-120b-131072": ("gpt-oss-120b", "renamed on Metis in January 2026"),
}


def current_model(model: str) -> str:
    """Today's served name for ``model`` (itself when it was never renamed)."""
    return RENAMED.get(model, (model, ""))[0]


def weights_of(model: str) -> str:
    """The weights a served model name points to: the organisation and a context-length suffix dropped
    ("openai/gpt-oss-120b" and "gpt-oss-120b-131072" are both "gpt-oss-120b")."""
    name = model.split("/")[-1].lower()
    return re.sub(r"-(\d{4,6}|\d+k)$", "", name)


def several_models(models: Sequence[str]) -> bool:
    """Whether ``models`` name different weights (:func:`weights_of`)."""
    return len({weights_of(m) for m in models}) > 1


def is_local(base_url: str) -> bool:
    return base_url == LOCAL or base_url.startswith(LOCAL + ":")


def local_configuration(base_url: str) -> str:
    """The stand-in's configuration a ``local:NAME`` base URL asks for ("batched" for plain "local")."""
    return base_url.partition(":")[2] or "batched"


def _check_dataset(value: str) -> Optional[str]:
    """A local dataset that is there must be a folder or a regular file: ``datasets`` would otherwise look
    for it on the hub and blame the name (a FIFO or a device is refused unopened)."""
    path = os.path.expanduser(value)
    if os.path.lexists(path) and not os.path.isdir(path):
        return existing_file(path)
    return None


def _check_base_url(value: Any) -> Optional[str]:
    for url in value:
        if is_local(url):
            continue
        if not url.startswith(("http://", "https://")):
            return "{!r} is neither 'local:<configuration>' nor an http(s) URL".format(url)
        if url.endswith("/"):
            return ("{!r} ends in '/': the OpenAI client adds '/chat/completions' itself, and a trailing slash "
                    "gives a 404 on the ALCF gateway; drop it".format(url))
        if url.rstrip("/").endswith(("/chat/completions", "/completions")):
            return "{!r} names the request path; give the base URL ending in /v1 (the client adds " \
                   "/chat/completions)".format(url)
    return None


def _check_lists(config: Config) -> Optional[Tuple[str, str]]:
    names, urls, models = config.endpoint_names, config.base_urls, config.models
    if not names:
        return "endpoint_names", "name at least one endpoint"
    if len(urls) != len(names) or len(models) != len(names):
        return "base_urls", "endpoint_names, base_urls and models must have one entry each per endpoint " \
                            "(got {}, {} and {})".format(len(names), len(urls), len(models))
    if len(set(names)) != len(names):
        return "endpoint_names", "each endpoint needs a name of its own"
    for url, model in zip(urls, models):
        if model == "auto" and not is_local(url):
            return "models", "'auto' takes the local stand-in's model; name the model {} serves".format(url)
    return None


def _check_levels(config: Config) -> Optional[Tuple[str, str]]:
    levels = config.concurrency
    if not levels or any(level < 1 or level > 256 for level in levels):
        return "concurrency", "give one or more levels, each from 1 to 256"
    if len(set(levels)) != len(levels):
        return "concurrency", "each level once"
    return None


def _check_load(config: Config) -> Optional[Tuple[str, str]]:
    rates = config.request_rate
    if any(rate <= 0 or rate > 1000 for rate in rates):
        return "request_rate", "each rate is requests per second, more than 0 and at most 1000"
    if len(set(rates)) != len(rates):
        return "request_rate", "each rate once"
    if config.max_concurrency is not None and not rates and not config.knee:
        return "max_concurrency", "caps requests in flight under a request_rate; with concurrency levels alone, " \
                                  "the level is the cap (set request_rate, or leave max_concurrency None)"
    if config.knee and not targets_of(config):
        return "knee", "the knee is the load where goodput stops rising, and goodput needs a target: set " \
                       "ttft_target_s, tpot_target_s or e2el_target_s"
    return None


def targets_of(config: Config) -> Dict[str, float]:
    """The goodput targets set, in seconds by name ("ttft", "tpot", "e2el")."""
    found = {"ttft": config.ttft_target_s, "tpot": config.tpot_target_s, "e2el": config.e2el_target_s}
    return {name: value for name, value in found.items() if value is not None}


SPEC = Spec(
    EXERCISE,
    Param("endpoint_names", list, ["batched", "sequential"], item_type=str,
          help="a short name per endpoint, used in tables and plots"),
    Param("base_urls", list, ["local:batched", "local:sequential"], item_type=str, check=_check_base_url,
          help="per endpoint: 'local:<configuration>' (the stand-in on this machine) or an OpenAI-compatible "
               "base URL ending in /v1, e.g. ALCF's Metis or Sophia URL (inference.ENDPOINTS)"),
    Param("models", list, ["auto", "auto"], item_type=str,
          help="per endpoint: the model name the server serves ('auto': the local stand-in's)"),
    Param("local_reasoning_tokens", int, 0, min=0, max=1024,
          help="the stand-in answers as a reasoning model does (gpt-oss): its first N tokens of every answer are "
               "streamed as reasoning deltas, the rest as content; 0: no reasoning"),
    Param("local_model_size", str, "tiny", choices=("tiny", "small"),
          help="the stand-in's model (labkit.serving): a LLaMA with random weights; 'small' is about 8x the work "
               "per token"),
    Param("dataset", str, "builtin", check=_check_dataset,
          help="'builtin' (prompts that ship with labkit), a local .json/.jsonl/.csv/.parquet file, or a "
               "Hugging Face dataset name (datasets.load_dataset; needs the network)"),
    Param("dataset_split", str, "train", help="the dataset's split, e.g. 'validation' for SQuAD"),
    Param("dataset_field", str, "prompt",
          help="the dataset's column holding the prompt text, e.g. 'question' for SQuAD"),
    Param("input_tokens", int, None, min=1, max=32768, optional=True,
          help="synthetic prompts of about this many tokens (vllm bench serve's random dataset), made from the "
               "dataset's text; None: the dataset's prompts as they are"),
    Param("output_tokens", int, None, min=1, max=8192, optional=True,
          help="a fixed output length: every request asks for this many tokens with ignore_eos (servers that "
               "do not support ignore_eos may stop earlier: finish_reason says so); None: max_tokens, stop at will"),
    Param("length_range", float, 0.0, min=0.0, max=0.9,
          help="input/output lengths drawn uniformly from [n*(1-r), n*(1+r)] around input_tokens and "
               "output_tokens (vLLM's --random-range-ratio); 0: fixed lengths"),
    Param("ignore_eos", bool, False,
          help="send vLLM's ignore_eos (every answer runs to max_tokens); set by output_tokens"),
    Param("num_prompts", int, 4, min=1, max=10000, help="prompts sent per concurrency level and repeat"),
    Param("max_tokens", int, 16, min=1, max=8192, help="max_tokens of every request"),
    Param("temperature", float, 0.0, min=0.0, max=2.0, help="0: greedy decoding, so runs can be compared"),
    Param("seed", int, 0, min=0, max=2 ** 31 - 1, help="sent with every request (servers that take one use it)"),
    Param("concurrency", list, [1, 4], item_type=int, help="requests in flight at once, one level after another"),
    Param("request_rate", list, [], item_type=float,
          help="requests per second, one level after another, instead of concurrency levels: arrivals are "
               "scheduled ahead (Poisson, or gamma with burstiness), so a slow answer never lowers the rate; "
               "[]: the concurrency levels"),
    Param("burstiness", float, 1.0, min=0.0, min_exclusive=True, max=100.0,
          help="the gamma shape of the gaps between arrivals under request_rate: 1 is Poisson, below 1 burstier, "
               "above 1 more even (vllm bench serve's --burstiness)"),
    Param("max_concurrency", int, None, min=1, max=256, optional=True,
          help="under request_rate: at most this many requests in flight (later arrivals wait); None: no cap"),
    Param("knee", bool, False,
          help="search the knee: raise the load (concurrency, or request_rate's first rate, doubling) until "
               "goodput stops rising or latency runs away, per endpoint, within knee_max_requests and knee_max_s"),
    Param("knee_max_requests", int, 200, min=2, max=100000, help="the knee search's request budget per endpoint"),
    Param("knee_max_s", float, 120.0, min=0.0, min_exclusive=True, max=7200.0,
          help="the knee search's time budget per endpoint, in seconds (a level in flight finishes)"),
    Param("repeats", int, 3, min=1, max=100, help="how often each level is measured (for intervals)"),
    Param("warmup_requests", int, 1, min=0, max=100,
          help="requests sent to each endpoint first and left out of every number"),
    Param("ttft_target_s", float, 1.0, min=0.0, min_exclusive=True, optional=True,
          help="goodput target: time to first token at most this (None: no target)"),
    Param("tpot_target_s", float, 0.5, min=0.0, min_exclusive=True, optional=True,
          help="goodput target: time per output token at most this (None: no target)"),
    Param("e2el_target_s", float, None, min=0.0, min_exclusive=True, optional=True,
          help="goodput target: end-to-end latency at most this (None: no target)"),
    Param("timeout_s", float, 60.0, min=0.0, min_exclusive=True, max=3600.0,
          help="a request that takes longer is given up and counted as failed (timeout)"),
    Param("token_env", str, "ALCF_ACCESS_TOKEN",
          help="the environment variable holding the access token when inference_auth_token.py is not here"),
    Param("log_path", list, [], item_type=PATH, check=existing_file,
          help="pasted evidence to read instead of measuring: chat-completion JSON, a curl + time transcript, "
               "a streamed (SSE) transcript, or a JSON of results"),
    checks=[_check_lists, _check_levels, _check_load],
)
