"""GroqFlow 4.3.1 ``groqflow/groqmodel/execute.py``, the program that runs a build on the GroqChips
when the SDK has no ``groqmodel_execute_exe``: it needs the SDK's ``groq.api`` and ``groq.runner``,
so without the SDK it fails at its imports, as the real one does."""

import groq.api  # noqa: F401
import groq.runner.tsp  # noqa: F401
