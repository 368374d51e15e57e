"""The OpenAI chat-completions protocol as the local server speaks it: the chat template, the
request checked field by field, the response, the streamed chunks, ``usage`` and the error bodies.

``usage`` carries OpenAI's three counts and the server's own timings under the names SambaNova's
Metis uses, plus two of labkit's own (docs/serving.md lists them all).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from labkit.errors import LabkitError

if TYPE_CHECKING:  # the engine imports torch; the parent process imports this module for the template
    from labkit.serving.engine import Generation

__all__ = ["ROLES", "apply_chat_template", "ApiError", "ChatRequest", "parse_chat_request", "error_body",
           "completion_body", "chunk_body", "usage_body", "models_body", "DEFAULT_MAX_TOKENS"]

#: Completion length when the request gives neither max_tokens nor max_completion_tokens.
DEFAULT_MAX_TOKENS = 64

#: The roles a chat message may have (OpenAI's, less tools).
ROLES = ("system", "developer", "user", "assistant")


def apply_chat_template(messages: Sequence[dict]) -> str:
    """The prompt text for chat ``messages`` (dicts with ``role`` and string ``content``), in the local
    server's own template (not any vendor's): each message is ``<|role|>``, a newline, its content and
    a newline; the prompt ends with ``<|assistant|>`` and a newline, where the reply begins. The
    tokenizer puts its ``<s>`` before the whole text, as LLaMA's does."""
    parts = ["<|{}|>\n{}\n".format(m["role"], m["content"]) for m in messages]
    return "".join(parts) + "<|assistant|>\n"


class ApiError(LabkitError):
    """An error answered as the OpenAI API does: an HTTP status and ``{"error": {...}}``."""

    def __init__(self, status: int, message: str, type: str = "invalid_request_error",
                 param: Optional[str] = None, code: Optional[str] = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code


def error_body(error: ApiError) -> Dict[str, Any]:
    return {"error": {"message": error.message, "type": error.type, "param": error.param, "code": error.code}}


@dataclass
class ChatRequest:
    """A checked chat-completion request."""

    model: str
    messages: List[Dict[str, str]]
    max_tokens: int
    temperature: float
    top_p: float
    seed: Optional[int]
    ignore_eos: bool
    stream: bool
    include_usage: bool
    id: str
    created: int


def _number(body: Dict[str, Any], name: str, default: float, low: float, high: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ApiError(400, "{}: {!r} is not a number from {} to {}".format(name, value, low, high), param=name)
    return float(value)


def _integer(body: Dict[str, Any], name: str, low: int) -> Optional[int]:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ApiError(400, "{}: {!r} is not an integer of at least {}".format(name, value, low), param=name)
    return value


def _content(message: Any, index: int) -> Dict[str, str]:
    where = "messages[{}]".format(index)
    if not isinstance(message, dict):
        raise ApiError(400, "{}: a message is an object with role and content, not {!r}".format(where, message),
                       param="messages")
    role, content = message.get("role"), message.get("content")
    if role not in ROLES:
        raise ApiError(400, "{}.role: {!r} is not one of {}".format(where, role, list(ROLES)), param="messages")
    if isinstance(content, list):  # content parts: only text is understood here
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if len(texts) != len(content) or not all(isinstance(t, str) for t in texts):
            raise ApiError(400, "{}.content: only text parts ({{'type': 'text', 'text': ...}}) are served "
                                "here".format(where), param="messages")
        content = "".join(texts)
    if not isinstance(content, str):
        raise ApiError(400, "{}.content: a string is needed, not {!r}".format(where, content), param="messages")
    return {"role": role, "content": content}


def parse_chat_request(raw: bytes, served_model: str) -> ChatRequest:
    """The request in ``raw`` (a JSON body), checked; ApiError (400, or 404 for another model) if not."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ApiError(400, "The request body is not valid JSON: {}".format(error))
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ApiError(400, "model: a model name is required (this server serves {!r})".format(served_model),
                       param="model")
    if model != served_model:
        raise ApiError(404, "The model `{}` does not exist. This server serves `{}` (GET /v1/models lists "
                            "it).".format(model, served_model), param="model", code="model_not_found")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages: a non-empty list of messages is required", param="messages")
    checked = [_content(m, i) for i, m in enumerate(messages)]
    max_tokens = _integer(body, "max_tokens", 1)
    max_completion = _integer(body, "max_completion_tokens", 1)
    if max_tokens is not None and max_completion is not None and max_tokens != max_completion:
        raise ApiError(400, "max_tokens={} and max_completion_tokens={} disagree: give one".format(
            max_tokens, max_completion), param="max_completion_tokens")
    n = _integer(body, "n", 1)
    if n not in (None, 1):
        raise ApiError(400, "n: {}: this server returns one choice per request".format(n), param="n")
    if body.get("stop") not in (None, [], ""):
        raise ApiError(400, "stop: stop sequences are not supported by this server", param="stop")
    stream = False if body.get("stream") is None else body["stream"]
    if not isinstance(stream, bool):
        raise ApiError(400, "stream: {!r} is not true or false".format(stream), param="stream")
    options = body.get("stream_options")
    if options is not None and (not isinstance(options, dict) or not stream):
        raise ApiError(400, "stream_options: an object, and only with stream=true", param="stream_options")
    include_usage = bool((options or {}).get("include_usage", False))
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ApiError(400, "seed: {!r} is not an integer".format(seed), param="seed")
    ignore_eos = body.get("ignore_eos", False)  # vLLM's extension, as `vllm bench serve --ignore-eos` sends it
    if not isinstance(ignore_eos, bool):
        raise ApiError(400, "ignore_eos: {!r} is not true or false".format(ignore_eos), param="ignore_eos")
    return ChatRequest(model=model, messages=checked,
                       max_tokens=max_completion or max_tokens or DEFAULT_MAX_TOKENS,
                       temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
                       top_p=_number(body, "top_p", 1.0, 0.0, 1.0) or 1.0, seed=seed, ignore_eos=ignore_eos,
                       stream=stream, include_usage=include_usage, id="chatcmpl-" + uuid.uuid4().hex[:24],
                       created=int(time.time()))


def usage_body(gen: Generation, reasoning: int = 0) -> Dict[str, Any]:
    """OpenAI's token counts and the server's timings (Metis's names; docs/serving.md lists them);
    ``reasoning``: the server answers as a reasoning model, its first that many tokens reasoning
    (counted in ``completion_tokens`` and in ``completion_tokens_details.reasoning_tokens``, as OpenAI does)."""
    prompt, completion = len(gen.prompt_ids), gen.completion_tokens
    end = gen.finished_at if gen.finished_at is not None else time.perf_counter()
    total = max(end - gen.arrival, 1e-9)
    usage: Dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
    if reasoning:
        usage["completion_tokens_details"] = {"reasoning_tokens": min(reasoning, completion)}
    first = gen.first_token_at
    after = end - first if first is not None else 0.0
    first_ten = gen.token_times[min(10, completion) - 1] - first if completion > 1 else 0.0
    usage.update({
        "time_to_first_token": (first - gen.arrival) if first is not None else None,
        "total_latency": total,
        "completion_tokens_per_sec": completion / total,
        "completion_tokens_after_first_per_sec": (completion - 1) / after if completion > 1 and after > 0 else None,
        "completion_tokens_after_first_per_sec_first_ten":
            (min(10, completion) - 1) / first_ten if completion > 1 and first_ten > 0 else None,
        "total_tokens_per_sec": (prompt + completion) / total,
        "start_time": gen.arrival_wall,
        "end_time": gen.arrival_wall + total,
        "is_last_response": True,
        "stop_reason": gen.finish_reason,
        "time_in_queue": (gen.admitted_at - gen.arrival) if gen.admitted_at is not None else None,
        "batch_size_used": gen.batch_size_sum / max(completion, 1),
    })
    return usage


def _head(request: ChatRequest, config: str, kind: str) -> Dict[str, Any]:
    return {"id": request.id, "object": kind, "created": request.created, "model": request.model,
            "system_fingerprint": "labkit-" + config}


def completion_body(request: ChatRequest, text: str, gen: Generation, config: str,
                    reasoning: Optional[Tuple[str, str]] = None, reasoning_tokens: int = 0) -> Dict[str, Any]:
    """The whole answer; ``reasoning``: (field, text) of a reasoning model's thinking, beside ``content``."""
    message = {"role": "assistant", "content": text}
    if reasoning is not None:
        message[reasoning[0]] = reasoning[1]
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": gen.finish_reason}
    usage = usage_body(gen, reasoning_tokens)
    return dict(_head(request, config, "chat.completion"), choices=[choice], usage=usage)


def chunk_body(request: ChatRequest, config: str, delta: Optional[Dict[str, str]] = None,
               finish_reason: Optional[str] = None, usage: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """One ``chat.completion.chunk``: a delta, or the end (finish_reason), or usage (no choices)."""
    body = _head(request, config, "chat.completion.chunk")
    if usage is not None:
        body["choices"] = []
        body["usage"] = usage
    else:
        body["choices"] = [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}]
    return body


def models_body(model: str, created: int) -> Dict[str, Any]:
    return {"object": "list", "data": [{"id": model, "object": "model", "created": created,
                                        "owned_by": "labkit"}]}
