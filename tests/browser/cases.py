"""What the browser test types into each notebook and what it expects to see: one entry each.

Adding a notebook, or a new behaviour of one, is a new or changed entry here; the test code in
test_lab.py does not change. ``parameters`` are typed over the values in the parameters cell
(golden.yml's small sizes by default); ``bad`` is one (name, source text) typed for the second
pass; ``defaults`` says what *Run All* with the notebook untouched does on a 2-core machine:
``"runs"`` (and then it must run clean) or a list of words its single stop message contains.
``evidence`` is a folder of the repository copied beside the notebook (what a student has made
before opening it), and ``defaults_show`` what the defaults pass shows where it differs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
GOLDEN = yaml.safe_load((ROOT / "tests" / "golden" / "golden.yml").read_text())


@dataclass(frozen=True)
class Case:
    key: str                               # notebooks/<key>.ipynb
    parameters: Dict[str, Any]             # typed as ``name = repr(value)`` over the cell's line
    bad: Tuple[str, str]                   # (name, source text of a wrong value)
    defaults: Union[str, List[str]]        # "runs", or words of the one stop message
    plots: int = 1                         # at least this many images
    tables: int = 1                        # at least this many HTML tables
    widgets: int = 0                       # at least this many progress bars that stay shown
    stderr: List[str] = field(default_factory=list)  # regexes of stderr lines the notebook means
    records: bool = True                   # the record cell stores at least one run
    timeout: float = 900                   # seconds for Run All with ``parameters``
    defaults_timeout: float = 1800         # seconds for Run All with the defaults
    evidence: Optional[Tuple[str, str]] = None  # (folder of the repository, name beside the notebook)
    defaults_show: Dict[str, Any] = field(default_factory=dict)  # plots/tables/records of the defaults pass

    @property
    def notebook(self) -> str:
        return self.key + ".ipynb"


def golden(key: str, **changes: Any) -> Dict[str, Any]:
    values = dict(GOLDEN[key]["parameters"]) if key in GOLDEN else {}
    values.update(changes)
    return values


CASES = [
    Case("graphcore/mnist", golden("graphcore/mnist"), bad=("epochs", '"ten"'), defaults="runs",
         plots=1, tables=2, widgets=1),
    Case("groq/bert_tiny", golden("groq/bert_tiny"), bad=("batch_size", "0"), defaults="runs",
         plots=1, tables=3),
    Case("cerebras/bert_large", golden("cerebras/bert_large"), bad=("max_steps", "-1"),
         defaults=["ParameterError", "model_size", "days", "allow_long_run"], plots=1, tables=1),
    Case("cerebras/llama2_7b", golden("cerebras/llama2_7b"), bad=("batch_size", "0"), defaults="runs",
         plots=1, tables=2, widgets=1),
    Case("sambanova/bert_large", golden("sambanova/bert_large"), bad=("ntasks", '"two"'),
         defaults=["ParameterError", "model_size='large'", "nothing was run", "model_size='micro'"],
         plots=2, tables=2),
    # Defaults: the stand-in server in its two configurations, concurrency 1 and 4, 3 repeats (about a minute).
    Case("sambanova/inference", golden("sambanova/inference"), bad=("max_tokens", "0"), defaults="runs",
         plots=1, tables=3),
    Case("comparison/ipu_vs_gpu", golden("comparison/ipu_vs_gpu"), bad=("epochs", "0"), defaults="runs",
         plots=1, tables=2),
    # Typed: the portable runs of the golden homework (what a student without a testbed account
    # hands in), one table and plot per testbed. Defaults: no runs yet, so words and no figure.
    Case("homework/ai_testbeds", golden("homework/ai_testbeds", runs_dir="portable-runs"), bad=("logs_dir", "5"),
         defaults="runs", plots=4, tables=4, evidence=("tests/golden/homework/runs", "portable-runs"),
         defaults_show=dict(plots=0, tables=1, records=False)),
    # The 2025 homework, typed: the golden copy's evidence (CS-3 logs and tiny portable runs of both
    # exercises), a table per section and the inference section's per-endpoint table; a plot each.
    Case("homework/ai_testbeds_2025", golden("homework/ai_testbeds_2025", logs_dir="evidence-2025/logs",
                                             runs_dir="evidence-2025/runs"),
         bad=("runs_dir", "5"), defaults="runs", plots=2, tables=4,
         evidence=("tests/golden/homework/evidence_2025", "evidence-2025"),
         defaults_show=dict(plots=0, tables=1, records=False)),
]


def case(key: str) -> Optional[Case]:
    return next((c for c in CASES if c.key == key), None)
