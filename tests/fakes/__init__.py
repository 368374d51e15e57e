"""Fakes of the vendors' APIs, one place for all of them (tests/fakes/README.md says which API
each speaks and where that API is documented).

A fake that labkit imports under the vendor's name lives in a folder of its own, put first on
``sys.path`` (or on a kernel's PYTHONPATH) by the tests that use it, so that it is found only
there; the others are programs copied into a stand-in vendor tree.
"""

import importlib.util
import sys
from pathlib import Path

__all__ = ["HERE", "POPTORCH", "GROQFLOW", "CEREBRAS_RUN", "CSZOO", "CSCTL", "import_poptorch"]

HERE = Path(__file__).resolve().parent

#: Put on sys.path: ``import poptorch`` (Graphcore).
POPTORCH = HERE / "poptorch"
#: Put on sys.path: ``import groqflow`` (Groq).
GROQFLOW = HERE / "groqflow"
#: Copied as the Cerebras modelzoo's BERT ``run.py``.
CEREBRAS_RUN = HERE / "cerebras_run.py"
#: Run as ``cszoo`` (Cerebras modelzoo 2.6 CLI and a simulated CS-3); needs $FAKE_CSZOO_STATE.
CSZOO = HERE / "cszoo.py"
#: Run as ``csctl`` (``get jobs``, ``cancel job ID``), sharing the fake cszoo's $FAKE_CSZOO_STATE.
CSCTL = HERE / "csctl.py"


def import_poptorch(monkeypatch, system_ipus: int = 1):
    """The fake PopTorch loaded afresh as ``poptorch`` (no calls logged, no IPU held) on a system of
    ``system_ipus`` IPUs (1: a job under ``srun --ipus=1``); gone from sys.modules after the test."""
    monkeypatch.syspath_prepend(str(POPTORCH))
    spec = importlib.util.spec_from_file_location("poptorch", str(POPTORCH / "poptorch.py"))
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "poptorch", module)
    spec.loader.exec_module(module)
    module.SYSTEM_IPUS = system_ipus
    return module
