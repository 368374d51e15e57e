"""A local OpenAI-compatible inference server: a stand-in for a real service (SambaNova's Metis,
the ALCF's vLLM on Sophia) on a laptop, in CI, without network.

    from labkit import serving
    with serving.start_server(config="batched", model_size="tiny") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key=server.api_key)
        stream = client.chat.completions.create(model=server.model, messages=[...], stream=True,
                                                stream_options={"include_usage": True}, max_tokens=32)

From a shell: ``python -m labkit.serving --config sequential`` (prints its URL on one line).
Two scheduling configurations of the same model to compare (``CONFIGS``); docs/serving.md says more.
"""

from __future__ import annotations

from labkit.serving.configs import API_KEY_ENV, CONFIGS, DEFAULT_MAX_QUEUE, DEFAULT_THREADS
from labkit.serving.process import LocalServer, ServerStartError, start_server
from labkit.serving.protocol import apply_chat_template

__all__ = ["start_server", "LocalServer", "ServerStartError", "CONFIGS", "DEFAULT_MAX_QUEUE", "DEFAULT_THREADS", "API_KEY_ENV",
           "apply_chat_template"]
