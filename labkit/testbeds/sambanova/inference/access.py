"""Reaching an endpoint: the access token, kept out of every output; what the endpoint serves and
whether the model is ready, before anything is measured; what each failure means in one sentence
(docs/sambanova.md, "Access" and "The service in 2026").

:func:`readiness` says a model on Sophia is cold (its first request starts loading it, 10-15 minutes:
argonne-lcf/user-guides, inference-endpoints.md) instead of letting every request time out.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple
from urllib import error, request
from urllib.parse import urlsplit

from labkit.errors import LabkitError
from labkit.testbeds.sambanova.inference.spec import GATEWAY, RENAMED, current_model

__all__ = ["Secret", "AccessError", "find_token", "key_for", "is_alcf", "status_of", "explain", "HELPER", "REFRESH",
           "NO_KEY", "Readiness", "NotServed", "list_models", "readiness", "job_state", "cluster_of", "COLD"]

#: What the OpenAI SDK is given for a server that asks for no key (it refuses to start without one);
#: vLLM's documentation uses the same word.
NO_KEY = "EMPTY"

#: The course's helper (argonne-lcf/inference-endpoints).
HELPER = "inference_auth_token.py"
REFRESH = "python inference_auth_token.py authenticate --force"


class Secret:
    """A token that does not show itself: ``str``, ``repr`` and pickling give no trace of it."""

    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str = "") -> None:
        self._value = value
        self.source = source

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret(<hidden>, from {})".format(self.source or "?")

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("an access token is not pickled (it would end up on disk)")


class AccessError(LabkitError, RuntimeError):
    """No token could be found; the message says how to get one. Shown in Jupyter as its one line."""

    shown_as = "AccessError"


def _helper_module(folder: str):
    path = os.path.join(folder, HELPER)
    if os.path.isfile(path):
        spec = importlib.util.spec_from_file_location("inference_auth_token", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module, path
    if importlib.util.find_spec("inference_auth_token") is not None:
        module = importlib.import_module("inference_auth_token")
        return module, getattr(module, "__file__", HELPER)
    return None, None


def find_token(env: str = "ALCF_ACCESS_TOKEN", folder: Optional[str] = None) -> Secret:
    """The access token: the course helper's ``get_access_token()`` (the helper in ``folder``, the working
    directory, or importable), else ``$env``, else ``$OPENAI_API_KEY``; else :class:`AccessError` says what to do."""
    folder = folder or os.getcwd()
    problem = ""
    try:
        module, path = _helper_module(folder)
    except Exception as exc:  # noqa: BLE001 - e.g. globus_sdk missing: fall back to the variable, say why
        module, path = None, os.path.join(folder, HELPER)
        problem = "{} could not be loaded ({}: {})".format(path, type(exc).__name__, exc)
    if module is not None and hasattr(module, "get_access_token"):
        try:
            token = module.get_access_token()
        except Exception as exc:  # noqa: BLE001
            problem = "{}'s get_access_token() failed ({})".format(path, type(exc).__name__)
        else:
            if token:
                return Secret(str(token).strip(), "{}'s get_access_token()".format(HELPER))
    for name in (env, "OPENAI_API_KEY"):
        if os.environ.get(name):
            return Secret(os.environ[name].strip(), "the environment variable " + name)
    raise AccessError(("no access token: " + (problem + "; " if problem else "") +
                       "put the course's {} beside the notebook and run `python {} authenticate` once, or set "
                       "{}").format(HELPER, HELPER, env))


def is_alcf(base_url: str) -> bool:
    """Whether ``base_url`` is an ALCF endpoint (the only hosts the ALCF token is sent to)."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "alcf.anl.gov" or host.endswith(".alcf.anl.gov")


def key_for(base_url: str, env: str = "ALCF_ACCESS_TOKEN", folder: Optional[str] = None) -> Secret:
    """The key sent to ``base_url``: the ALCF token (:func:`find_token`) to an ALCF endpoint only; to any other
    server ``$OPENAI_API_KEY`` when set, else none (:data:`NO_KEY`), so a server without authentication needs none."""
    if is_alcf(base_url):
        return find_token(env, folder)
    if os.environ.get("OPENAI_API_KEY"):
        return Secret(os.environ["OPENAI_API_KEY"].strip(), "the environment variable OPENAI_API_KEY")
    return Secret(NO_KEY, "no key (not an ALCF endpoint, OPENAI_API_KEY unset)")


def status_of(exc: BaseException) -> Tuple[str, Optional[int]]:
    """A failed request's status ("401", "timeout", "connection", ...) and its HTTP status, from the SDK's error."""
    code = getattr(exc, "status_code", None)
    if isinstance(code, int):
        return str(code), code
    name = type(exc).__name__
    if "Timeout" in name:
        return "timeout", None
    if "Connection" in name:
        return "connection", None
    return "error", None


#: What a student does about a failed request, by its status ("5xx": any server error, "": any other).
_ADVICE = {
    "401": ("{where} refused the access token (HTTP {status}): it has expired or was never valid; run `{refresh}` "
            "(ALCF asks for a new login every 7 days), then run the notebook again"),
    "400": ("{where} refused the request as malformed (HTTP 400): its message (run.details) names the field, most "
            "often max_tokens beyond the model's context length; lower max_tokens"),
    "404": ("{where} answered 404 Not Found: check the base URL (it ends in /v1, with no trailing slash and without "
            "/chat/completions, which the client adds) and the model name"),
    "429": ("{where} answered 429 Too Many Requests: lower the concurrency or num_prompts, or wait a minute and "
            "run again (labkit retries nothing, so this is counted as a failed request)"),
    "timeout": ("{where} did not answer within timeout_s = {timeout_s:g} s: raise timeout_s or lower max_tokens and "
                "the concurrency (a queued model on the ALCF service can take minutes to start)"),
    "connection": ("{where} could not be reached: check the URL and your network (the ALCF service needs Argonne's "
                   "network or a VPN from outside)"),
    "interrupted": "{where}: stopped by the interrupt before it ended",
    "5xx": "{where} failed on the server's side (HTTP {status}): try again later, with fewer requests at once",
    "": "{where} failed ({status}): see the request's error in run.details",
}
_ADVICE["403"] = _ADVICE["401"]


def explain(status: str, endpoint: str, base_url: str, timeout_s: float = 0.0) -> str:
    """What a student does about a failed request, in one sentence."""
    server_side = status.isdigit() and status.startswith("5")
    advice = _ADVICE.get(status) or _ADVICE["5xx" if server_side else ""]
    return advice.format(where="{} ({})".format(endpoint, base_url), status=status, timeout_s=timeout_s,
                         refresh=REFRESH)


#: What a cold model costs, in the user guide's words.
COLD = "cold: loading takes 10-15 min (the first request starts it; Sophia unloads a model after 2 h unused)"


class NotServed(LabkitError, RuntimeError):
    """The endpoint does not serve the model asked for; the message names what it serves now."""

    shown_as = "NotServed"


@dataclass
class Readiness:
    ready: bool
    sentence: str
    models: Optional[List[str]] = None  # None: the endpoint could not be asked
    renamed: str = ""


def _get(url: str, token: str) -> Any:
    req = request.Request(url, headers={"Authorization": "Bearer " + token, "Accept": "application/json"})
    with request.urlopen(req, timeout=10.0) as answer:  # noqa: S310 - http(s) URLs checked by the SPEC
        return json.loads(answer.read().decode("utf-8"))


def list_models(endpoint: Any) -> List[str]:
    """The model names ``GET {base_url}/models`` lists (OpenAI's and vLLM's shape: {"data": [{"id": ...}]})."""
    body = _get(endpoint.base_url.rstrip("/") + "/models", endpoint.api_key.reveal())
    items = body.get("data", []) if isinstance(body, dict) else body
    return [str(item.get("id")) for item in items if isinstance(item, dict) and item.get("id")]


def cluster_of(base_url: str) -> str:
    """The ALCF cluster a gateway URL names ("sophia" for .../resource_server/sophia/vllm/v1), or ""."""
    if not base_url.startswith(GATEWAY + "/"):
        return ""
    return base_url[len(GATEWAY) + 1:].split("/", 1)[0]


def _objects(node: Any) -> Iterator[Dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        node = list(node.values())
    if isinstance(node, list):
        for child in node:
            yield from _objects(child)


def job_state(jobs: Any, model: str) -> str:
    """"running", "queued" (or starting) or "cold" for ``model`` in a /jobs answer; "" when the answer
    does not say (its shape is not documented: any object naming the model with a status-like field)."""
    statuses = [" ".join(v.lower() for k, v in node.items() if isinstance(v, str) and
                         k.lower().replace(" ", "_") in ("status", "state", "model_status", "job_status"))
                for node in _objects(jobs) if any(isinstance(v, str) and model in v for v in node.values())]
    for state, words in (("running", ("running", "live", "ready")), ("queued", ("queued", "pending", "starting"))):
        if any(word in status for status in statuses for word in words):
            return state
    return "cold" if jobs else ""


def readiness(endpoint: Any) -> Readiness:
    """Whether ``endpoint.model`` is served and loaded, in one sentence; a renamed model is mapped to
    today's name (``endpoint.model`` changes, the sentence says so). Never raises for an endpoint that
    cannot be asked (Metis answers chat completions only): the run then goes on, said so."""
    name, model = endpoint.name, endpoint.model
    renamed = ""
    if model in RENAMED:
        new, when = RENAMED[model]
        renamed = "{}: {} is now {} ({}); old logs and responses keep their old name".format(name, model, new, when)
    try:
        models: Optional[List[str]] = list_models(endpoint)
    except (error.URLError, OSError, ValueError) as exc:
        models = None
        why = getattr(exc, "code", None) or type(exc).__name__
        asked = "{} lists no models (GET /models: {})".format(name, why)
    if models is not None and model not in models:
        new = current_model(model)
        if new in models:
            endpoint.model = new
            return Readiness(True, renamed, models, renamed)
        return Readiness(False, "{} does not serve {}: it serves now {}".format(
            name, model, ", ".join(models) or "no model"), models)
    if models is None and renamed:
        endpoint.model = current_model(model)
    state = ""
    cluster = cluster_of(endpoint.base_url)
    if cluster:
        try:  # the gateway's /{cluster}/jobs: the models running, starting and queued
            jobs = _get("{}/{}/jobs".format(GATEWAY, cluster), endpoint.api_key.reveal())
            state = job_state(jobs, endpoint.model)
        except (error.URLError, OSError, ValueError):
            pass
    if state == "cold":
        sentence = "{}: {} is not loaded, {}; set timeout_s above 900 for the first request, or wait".format(
            name, endpoint.model, COLD)
    elif state == "queued":
        sentence = "{}: {} is queued or starting, {}".format(name, endpoint.model, COLD)
    elif models is not None:
        sentence = "{}: {} is served (GET /models lists it{})".format(
            name, endpoint.model, "; the cluster's /jobs says it is running" if state == "running" else "")
    else:
        sentence = asked + "; the run goes on, and a 404 will name the model"
    if renamed:
        sentence = renamed + "; " + sentence
    endpoint.served = models
    return Readiness(True, sentence, models, renamed)
