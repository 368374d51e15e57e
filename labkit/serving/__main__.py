"""``python -m labkit.serving``: run the local OpenAI-compatible server (labkit/serving/serve.py)."""

from __future__ import annotations

import sys

from labkit.serving.serve import main

if __name__ == "__main__":
    sys.exit(main())
