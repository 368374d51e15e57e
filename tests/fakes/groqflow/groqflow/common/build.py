"""GroqFlow's build constants that labkit-side code may read."""

import os

DEFAULT_CACHE_DIR = os.environ.get("GROQFLOW_CACHE_DIR", os.path.expanduser("~/.cache/groqflow"))
