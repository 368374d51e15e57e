"""What an endpoint serves now, and whether the model is ready, before anything is measured.

A model the endpoint does not list stops the run before it starts, with one sentence naming what it
serves now. On Sophia a model that is not loaded is "cold": its first request starts loading it,
which takes 10-15 minutes (argonne-lcf/user-guides, inference-endpoints.md); the check says so
instead of letting every request time out. Nothing here reached the ALCF service in labkit's tests:
the stand-in answers GET /v1/models as vLLM does, and the ALCF calls follow the user guide.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional
from urllib import error, request

from labkit.errors import LabkitError
from labkit.testbeds.sambanova.inference.spec import GATEWAY, RENAMED, current_model

__all__ = ["Readiness", "NotServed", "list_models", "readiness", "cluster_jobs", "job_state",
           "cluster_of", "COLD"]

#: What a cold model costs, in the user guide's words.
COLD = "cold: loading takes 10-15 min (the first request starts it; Sophia unloads a model after 2 h unused)"


class NotServed(LabkitError, RuntimeError):
    """The endpoint does not serve the model asked for; the message names what it serves now."""

    shown_as = "NotServed"


@dataclass
class Readiness:
    endpoint: str
    ready: bool
    sentence: str
    models: Optional[List[str]] = None  # None: the endpoint could not be asked
    renamed: str = ""
    state: str = ""  # from the cluster's /jobs where reachable: "running", "queued", "cold" or ""


def _get(url: str, token: str, timeout: float) -> Any:
    req = request.Request(url, headers={"Authorization": "Bearer " + token, "Accept": "application/json"})
    with request.urlopen(req, timeout=timeout) as answer:  # noqa: S310 - http(s) URLs checked by the SPEC
        return json.loads(answer.read().decode("utf-8"))


def list_models(endpoint: Any, timeout: float = 10.0) -> List[str]:
    """The model names ``GET {base_url}/models`` lists (OpenAI's and vLLM's shape: {"data": [{"id": ...}]})."""
    body = _get(endpoint.base_url.rstrip("/") + "/models", endpoint.api_key.reveal(), timeout)
    items = body.get("data", []) if isinstance(body, dict) else body
    return [str(item.get("id")) for item in items if isinstance(item, dict) and item.get("id")]


def cluster_of(base_url: str) -> str:
    """The ALCF cluster a gateway URL names ("sophia" for .../resource_server/sophia/vllm/v1), or ""."""
    if not base_url.startswith(GATEWAY + "/"):
        return ""
    return base_url[len(GATEWAY) + 1:].split("/", 1)[0]


def cluster_jobs(token: str, cluster: str, timeout: float = 10.0) -> Any:
    """The ALCF gateway's ``/{cluster}/jobs`` answer: the models running, starting and queued."""
    return _get("{}/{}/jobs".format(GATEWAY, cluster), token, timeout)


def _objects(node: Any) -> Iterator[Dict[str, Any]]:
    """Every JSON object in ``node``, nested ones included."""
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


def readiness(endpoint: Any, timeout: float = 10.0) -> Readiness:
    """Whether ``endpoint.model`` is served and loaded, in one sentence; a renamed model is mapped to
    today's name (``endpoint.model`` changes, the sentence says so). Never raises for an endpoint that
    cannot be asked (Metis answers chat completions only): the run then goes on, said so."""
    name, model = endpoint.name, endpoint.model
    renamed = ""
    if model in RENAMED:
        new, when = RENAMED[model]
        renamed = "{}: {} is now {} ({}); old logs and responses keep their old name".format(name, model, new, when)
    try:
        models: Optional[List[str]] = list_models(endpoint, timeout)
    except (error.URLError, OSError, ValueError) as exc:
        models = None
        why = getattr(exc, "code", None) or type(exc).__name__
        asked = "{} lists no models (GET /models: {})".format(name, why)
    if models is not None and model not in models:
        new = current_model(model)
        if new in models:
            endpoint.model = new
            return Readiness(name, True, renamed, models, renamed)
        return Readiness(name, False, "{} does not serve {}: it serves now {}".format(
            name, model, ", ".join(models) or "no model"), models)
    if models is None and renamed:
        endpoint.model = current_model(model)
    state = ""
    cluster = cluster_of(endpoint.base_url)
    if cluster:
        try:
            state = job_state(cluster_jobs(endpoint.api_key.reveal(), cluster, timeout), endpoint.model)
        except (error.URLError, OSError, ValueError):
            state = ""
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
    return Readiness(name, True, sentence, models, renamed, state)
