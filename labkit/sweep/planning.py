"""What a sweep runs, and its folder: the checked grid x repeats and ``OUT/sweep.json``.

    from labkit.sweep import plan
    sweep = plan("notebooks/graphcore/mnist.ipynb", [("epochs", "4,10")], repeats=3)
    sweep.tasks("runs/mnist-epochs")      # one task per configuration and seed

``OUT/sweep.json`` (:data:`MANIFEST`) holds the arguments, ``OUT/runs/`` each run's notebook and row.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from labkit.errors import LabkitError
from labkit.execute import notebook_parameters
from labkit.files import NotAFile, regular_file, write_atomic
from labkit.params import ParameterError
from labkit.results import same_value

__all__ = ["SweepError", "SweepPlan", "plan", "run_key", "is_sweep", "check_out", "prepare_out",
           "read_json", "grid_points", "same_grid_value", "MANIFEST", "FORMAT", "RUNS", "MAX_REPEATS", "MAX_RUNS"]

MANIFEST = "sweep.json"
FORMAT = "labkit-sweep/1"
RUNS = "runs"
#: The lock :func:`labkit.files.exclusive` keeps beside the manifest while a sweep writes its folder.
LOCK = "." + MANIFEST + ".lock"

#: Repeats of one configuration. Past 100 the statistics gain next to nothing: one more run narrows
#: the 95 % CI by under 0.5 % (it shrinks as t(0.975, n-1)/sqrt(n)), and the standard deviation of
#: 100 runs is already known to about 7 % (1/sqrt(2(n-1))). A larger number is a typo, or a study
#: that belongs in several sweeps.
MAX_REPEATS = 100
#: Runs in one sweep (configurations x repeats). Each run is a kernel start (seconds at the least)
#: and two files, and every report reads every row: 10,000 runs are hours of one worker even for
#: the smallest notebook. The bound is checked by arithmetic, before any grid is built.
MAX_RUNS = 10000


class SweepError(LabkitError, ValueError):
    """The sweep's arguments are wrong, or its --out belongs to another sweep."""


@dataclass
class SweepPlan:
    """What a sweep runs: the notebook, the grid (typed values), the repeats and their seeds."""

    notebook: str
    grid: Dict[str, List[Any]]
    repeats: int
    seeds: List[int]
    timeout: Optional[float] = None
    notebook_sha256: str = ""
    baseline: Optional[Dict[str, Any]] = None
    baseline_reason: str = ""

    def tasks(self, out: str) -> List[Dict[str, Any]]:
        """One task per configuration and seed, in a fixed order (configuration, then seed)."""
        tasks = []
        for config in grid_points(self.grid):
            for seed in self.seeds:
                parameters = dict(config, seed=seed)
                key = run_key(parameters)
                tasks.append({
                    "key": key, "notebook": self.notebook, "parameters": parameters,
                    "output": os.path.join(out, RUNS, key + ".ipynb"),
                    "row": os.path.join(out, RUNS, key + ".json"), "timeout": self.timeout,
                })
        return tasks

    def identity(self) -> Dict[str, Any]:
        """What must match for a restart to resume this sweep (workers and timeout may change)."""
        return {"format": FORMAT, "notebook": self.notebook, "notebook_sha256": self.notebook_sha256,
                "grid": self.grid, "repeats": self.repeats, "seeds": self.seeds}

    def manifest(self) -> Dict[str, Any]:
        data = self.identity()
        data.update({"timeout": self.timeout, "baseline": self.baseline, "baseline_reason": self.baseline_reason,
                     "varied": [n for n, v in self.grid.items() if len(v) > 1]})
        return data


def grid_points(grid: Mapping[str, Sequence[Any]]) -> List[Dict[str, Any]]:
    """Every point of ``grid``, as {parameter: value}, in the grid's order."""
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


def run_key(parameters: Mapping[str, Any]) -> str:
    """A file name for one run: ``epochs=4__learning_rate=0.01__seed=1``."""
    text = "__".join("{}={}".format(k, json.dumps(v) if not isinstance(v, str) else v) for k, v in parameters.items())
    text = re.sub(r"[^A-Za-z0-9._=+-]", "_", text)
    if len(text) > 120:  # long grids: keep a readable head and make it unique with a hash
        text = text[:100] + "__" + hashlib.sha1(text.encode()).hexdigest()[:12]
    return text


def plan(notebook: str, grid_text: Sequence[Tuple[str, str]], repeats: int = 1,
         timeout: Optional[float] = None) -> SweepPlan:
    """Check a sweep's arguments (every value of every parameter) before anything runs."""
    try:
        regular_file(notebook, "notebook")
    except (FileNotFoundError, NotAFile) as exc:
        raise SweepError(str(exc)) from None
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise SweepError("--repeats {}: must be a whole number from 1 to {} (each repeat is one run with its own "
                         "seed; past {} a repeat more narrows the confidence interval by under 0.5 %)".format(
                             repeats, MAX_REPEATS, MAX_REPEATS))
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not math.isfinite(timeout) or timeout <= 0):
        raise SweepError("--timeout {}: must be a finite, positive number of seconds (leave it out for no "
                         "limit)".format(timeout))
    declared = notebook_parameters(notebook)
    if "seed" not in declared.names:
        raise SweepError("{} declares no parameter 'seed', so its repeats cannot differ; add `seed = 0` to its "
                         "parameters cell (and use it). Its parameters:\n{}".format(notebook, declared.describe()))
    problems: List[str] = []
    grid: Dict[str, List[Any]] = {}
    for name, text in grid_text:
        values = [v.strip() for v in text.split(",")] if text.strip() else []
        if name == "seed":
            problems.append("-p seed {}: seeds are set by --repeats (default seed, +1, +2, ...), "
                            "not by the grid".format(text))
        elif name in grid:
            problems.append("-p {} is given twice; give all its values once, comma-separated".format(name))
        elif not values or any(v == "" for v in values):
            problems.append("-p {} {!r}: an empty value; give one or more values separated by commas, "
                            "e.g. -p {} 1,2".format(name, text, name))
        else:
            typed = []
            for value in values:
                try:
                    typed.append(declared.from_text({name: value})[name])
                except ParameterError as exc:
                    problems.extend("-p {} {}: {}".format(name, text, p) for p in exc.problems)
                    break
            else:
                if len(set(map(json.dumps, typed))) != len(typed):
                    problems.append("-p {} {}: a value is repeated; use --repeats for repeats".format(name, text))
                grid[name] = typed
    if problems:
        raise ParameterError(problems + ["", declared.describe()], declared.spec.name)
    total = repeats
    for values in grid.values():
        total *= len(values)
    if total > MAX_RUNS:
        raise SweepError("{} configurations x --repeats {} make {:,} runs; a sweep may have at most {:,} (each run "
                         "starts a kernel and keeps two files): split it into several sweeps".format(
                             total // repeats, repeats, total, MAX_RUNS))
    # every configuration as a whole (cross-checks between parameters)
    defaults = declared.spec.defaults()
    base_seed = defaults.get("seed")
    base_seed = base_seed if isinstance(base_seed, int) and not isinstance(base_seed, bool) else 0
    seeds = [base_seed + r for r in range(repeats)]
    with open(notebook, "rb") as f:
        sha256 = hashlib.sha256(f.read()).hexdigest()
    result = SweepPlan(os.path.abspath(notebook), grid, repeats, seeds, timeout, sha256)
    configurations = grid_points(grid)
    for config in configurations:
        declared.check(dict(config, seed=seeds[-1]))
    for config in configurations:
        if all(same_grid_value(config[n], defaults.get(n)) for n in config):
            result.baseline, result.baseline_reason = config, "the notebook's defaults"
            break
    else:
        result.baseline = configurations[0]
        result.baseline_reason = "the first configuration (the notebook's defaults are not in the grid)"
    return result


def same_grid_value(a: Any, b: Any) -> bool:
    """Equal grid values: exactly, 1 and 1.0 alike (a float parameter given as an int default)."""
    return same_value(a, b, rtol=0.0, atol=0.0)


def is_sweep(path: str) -> bool:
    return os.path.isfile(os.path.join(path, MANIFEST))


def check_out(sweep: SweepPlan, out: str) -> None:
    """Refuse an ``out`` that is a file, a folder of something else, or another sweep's folder,
    touching nothing (it runs again under the sweep's lock, in :func:`prepare_out`)."""
    manifest_path = os.path.join(out, MANIFEST)
    if os.path.exists(out) and not os.path.isdir(out):
        raise SweepError("--out {} is a file, not a folder; give a new folder, or a sweep's to resume it".format(out))
    if os.path.lexists(manifest_path):
        try:
            existing = read_json(manifest_path)
        except SweepError as exc:
            raise SweepError("{}; choose another --out".format(exc)) from None
        mine = json.loads(json.dumps(sweep.identity()))
        differences = [k for k in mine if existing.get(k) != mine[k]]
        if differences:
            lines = ["  {}: there {}, here {}".format(k, json.dumps(existing.get(k)), json.dumps(mine[k]))
                     for k in differences]
            raise SweepError("--out {} holds a different sweep; it is left untouched. Resume it with its own "
                             "arguments, or choose another --out.\n{}".format(out, "\n".join(lines)))
    elif os.path.isdir(out) and set(os.listdir(out)) - {LOCK}:
        raise SweepError("--out {} exists and is not a sweep folder (no {}); it is left untouched. "
                         "Choose a new or empty folder.".format(out, MANIFEST))


def prepare_out(sweep: SweepPlan, out: str) -> None:
    """Create ``out`` for this sweep, or check it belongs to this sweep (resume)."""
    check_out(sweep, out)
    os.makedirs(os.path.join(out, RUNS), exist_ok=True)
    write_atomic(os.path.join(out, MANIFEST), json.dumps(sweep.manifest(), indent=1) + "\n")


def read_json(path: str) -> Dict[str, Any]:
    """A JSON object of the sweep folder (its manifest, a run's row); a :class:`SweepError` naming the
    file when it is none (cut short by a full disk, a FIFO, a list), never a read that blocks."""
    try:
        regular_file(path, "sweep file")
        with open(path) as f:
            data = json.load(f)
    except NotAFile as exc:
        raise SweepError(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise SweepError("{}: not readable JSON ({})".format(path, exc)) from None
    if not isinstance(data, dict):
        raise SweepError("{}: holds a JSON {}, not an object".format(path, type(data).__name__))
    return data
