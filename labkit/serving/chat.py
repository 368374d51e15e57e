"""The chat template of the local server (a simple one, not any vendor's): each message becomes
``<|role|>`` and a newline, its content and a newline; the prompt ends with ``<|assistant|>``
and a newline, where the model's reply begins::

    <|system|>
    You are terse.
    <|user|>
    What is a KV cache?
    <|assistant|>

The tokenizer puts its ``<s>`` before the whole text, as LLaMA's does.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["ROLES", "apply_chat_template"]

#: The roles a chat message may have (OpenAI's, less tools).
ROLES = ("system", "developer", "user", "assistant")


def apply_chat_template(messages: Sequence[dict]) -> str:
    """The prompt text for chat ``messages`` (dicts with ``role`` and string ``content``)."""
    parts = ["<|{}|>\n{}\n".format(m["role"], m["content"]) for m in messages]
    return "".join(parts) + "<|assistant|>\n"
