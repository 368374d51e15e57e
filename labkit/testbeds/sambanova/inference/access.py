"""The access token, kept out of every output, and what each failure means in one sentence.

The token comes from the course's ``inference_auth_token.py`` (its ``get_access_token()`` refreshes
an expired token), else from an environment variable; records hold where it came from, never what
it is. Only ALCF endpoints get the ALCF token (:func:`key_for`; docs/sambanova.md, "Access").
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Optional, Tuple
from urllib.parse import urlsplit

from labkit.errors import LabkitError

__all__ = ["Secret", "AccessError", "find_token", "key_for", "is_alcf", "status_of", "explain", "HELPER", "REFRESH",
           "NO_KEY"]

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
    """The access token: ``inference_auth_token.get_access_token()`` when the helper is in ``folder``
    (the working directory) or importable, else ``$env``, else ``$OPENAI_API_KEY``.

    Raises :class:`AccessError` saying what to do when there is none.
    """
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
    """The key sent to ``base_url``: the ALCF token (:func:`find_token`) for an ALCF endpoint; for any
    other server ``$OPENAI_API_KEY`` when set, else none (the SDK's placeholder :data:`NO_KEY`).

    So a server without authentication needs no token, and the ALCF token never goes to another host.
    """
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


def explain(status: str, endpoint: str, base_url: str, timeout_s: float = 0.0) -> str:
    """What a student does about a failed request, in one sentence."""
    where = "{} ({})".format(endpoint, base_url)
    if status in ("401", "403"):
        return ("{} refused the access token (HTTP {}): it has expired or was never valid; run `{}` (ALCF asks for a "
                "new login every 7 days), then run the notebook again").format(where, status, REFRESH)
    if status == "400":
        return ("{} refused the request as malformed (HTTP 400): its message (run.details) names the field, most "
                "often max_tokens beyond the model's context length; lower max_tokens").format(where)
    if status == "404":
        return ("{} answered 404 Not Found: check the base URL (it ends in /v1, with no trailing slash and without "
                "/chat/completions, which the client adds) and the model name").format(where)
    if status == "429":
        return ("{} answered 429 Too Many Requests: lower the concurrency or num_prompts, or wait a minute and run "
                "again (labkit retries nothing, so this is counted as a failed request)").format(where)
    if status == "timeout":
        return ("{} did not answer within timeout_s = {:g} s: raise timeout_s or lower max_tokens and the "
                "concurrency (a queued model on the ALCF service can take minutes to start)").format(where, timeout_s)
    if status == "connection":
        return ("{} could not be reached: check the URL and your network (the ALCF service needs Argonne's network "
                "or a VPN from outside)").format(where)
    if status == "interrupted":
        return "{}: stopped by the interrupt before it ended".format(where)
    if status.isdigit() and status.startswith("5"):
        return "{} failed on the server's side (HTTP {}): try again later, with fewer requests at once".format(
            where, status)
    return "{} failed ({}): see the request's error in run.details".format(where, status)
