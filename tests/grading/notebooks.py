"""Build student notebooks for the grading tests from Python (never collected by nbval).

``homework(...)`` is a small homework in the shape of the real one: a parameters-free run of
the toy exercise at its default and at changed parameters (records named run_<i>), a
question heading with an answer cell, and whatever extra cells a test adds.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from labkit.results import SCRAP_MIME

QUESTION = "Question 1: what does the rate change?"
TEMPLATE_ANSWER = "*Write your answer here.*"
GOOD_ANSWER = ("A larger rate moves the value towards one faster, so after the same number of steps the "
               "score is higher; with a small rate the run needs many more steps to converge to the same score.")

RUN_CELL = "import labkit.results\nfrom tests.grading import toy\nlabkit.results.record(toy.run({args}), name={name!r})"


def run_cell(name: str, **params: Any) -> Any:
    args = ", ".join("{}={!r}".format(k, v) for k, v in params.items())
    return new_code_cell(RUN_CELL.format(args=args, name=name))


def homework(runs: Sequence[Dict[str, Any]] = ({"steps": 10, "rate": 0.3}, {"steps": 10, "rate": 0.6}),
             answer: Optional[str] = GOOD_ANSWER, extra: Sequence[Any] = (), before: Sequence[Any] = ()) -> Any:
    cells: List[Any] = [new_markdown_cell("# Toy homework\nRun the exercise, then answer.")]
    cells += list(before)
    cells += [run_cell("run_{}".format(i), **params) for i, params in enumerate(runs)]
    cells += list(extra)
    cells.append(new_markdown_cell("## " + QUESTION))
    cells.append(new_markdown_cell(TEMPLATE_ANSWER if answer is None else answer))
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def fake_record_output(name: str, score: float, steps: int = 10, rate: float = 0.3) -> Any:
    """A display output as labkit.results.record writes it: what a forger pastes into a notebook."""
    data = {"exercise": "toy/converge", "source": "portable", "status": "complete", "params": {"steps": steps, "rate": rate},
            "metrics": {"score": score}, "units": {"score": "%"}, "series": {}, "notes": [], "environment": {}, "version": 1}
    return new_output("display_data", data={SCRAP_MIME: {"name": name, "data": data, "encoder": "json", "version": 1}},
                      metadata={"scrapbook": {"name": name, "data": True, "display": False}})


def write(nb: Any, path: Any) -> str:
    nbformat.write(nb, str(path))
    return str(path)
