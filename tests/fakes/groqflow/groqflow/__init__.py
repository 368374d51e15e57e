"""Fake GroqFlow 4.3.1 for labkit's tests (see tests/fakes/README.md): ``groqit`` builds as far as the
real one does without the GroqWare SDK (ONNX export and optimization), stops where it stops, and on a
stand-in GroqNode (tests/fakes/groqnode.py) "compiles" and runs the model on the CPU.

Written from groqflow 4.3.1 (the PyPI wheel) and mlagility 3.3.1 (its ``onnxflow`` package); each
module names the file and functions it follows. The real package installs on Python < 3.11 with
torch 2.1.0 and NumPy < 2 (``make test-vendors``); tests/groq/test_groqflow_real.py runs the paths
that need no SDK against both, and they agree: the chip count with and without lspci, the chip rule,
``groqit`` on Debian (export, optimization, then ``EnvError`` at the dependency check, stdout left in
the stage's log) and on Ubuntu without groq-devtools (``StageError``). Past the SDK check (compile,
chips of a build, runs, figures) only the source was followed: the real package was never run there.
"""

from groqflow.justgroqit.groqit import groqit  # noqa: F401  (the documented entry point)

__version__ = "4.3.1+fake"
