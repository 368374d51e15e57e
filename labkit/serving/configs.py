"""The local server's two configurations and its defaults (no torch here: the parent process
that only starts and stops the server need not import it). ``batched`` is continuous batching,
like vLLM's; ``sequential`` serves one request at a time (docs/serving.md compares the two).
"""

from __future__ import annotations

from typing import Dict

__all__ = ["CONFIGS", "API_KEY_ENV", "DEFAULT_MAX_QUEUE", "DEFAULT_THREADS", "REASONING_FIELDS"]

#: Scheduling configurations: the most requests decoded together in one step.
CONFIGS: Dict[str, int] = {"batched": 16, "sequential": 1}

#: The environment variable the server reads its API key from (never the command line, which
#: other users of the machine can read).
API_KEY_ENV = "LABKIT_SERVING_API_KEY"

#: Requests that may wait beyond those being decoded before the server answers 429.
DEFAULT_MAX_QUEUE = 64

#: torch's threads in the server. One: the client measuring it shares the machine's cores, and
#: with two threads on a loaded 2-core machine torch's workers wait on each other (16 streams of
#: the tiny model took 27 s at 2 threads against 1.4 s at 1, measured while other work ran).
DEFAULT_THREADS = 1

#: Where a reasoning model's thinking goes in a message or a streamed delta, beside ``content``:
#: vLLM's older ``reasoning_content``, or ``reasoning`` (newer vLLM, gpt-oss on other servers).
REASONING_FIELDS = ("reasoning_content", "reasoning")
