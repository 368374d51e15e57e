"""GroqFlow proof-point logs (``bert_tiny.py``, ``minilmv2.py``): the cpu/groq result table.

Each run ends with GroqFlow's table (Source, Accuracy or Spearman Rank Correlation Coefficient,
end-to-end latency (ms) and IPS, on-chip latency (ms) and IPS; rows ``cpu``, ``groq``), after
``Building "name"`` ... or ``Build "name" ... found in cache``. Every table is one run; a build
that never reached its table is an incomplete run.

Verified only against real logs from the course (GroqFlow builds here only up to its SDK check).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from labkit.logs.base import LineReader, new_run, number
from labkit.results import Run
from labkit.testbeds.groq.metrics import METRICS, TABLE_COLUMNS

__all__ = ["GroqReader"]

_BUILDING = re.compile(r'Building "([^"]+)"')
_CACHED = re.compile(r'Build "([^"]+)".*found in cache')
_SCRIPT = re.compile(r"python3?\s+(\S+\.py)")

_COLUMNS = dict([("source", "source")] + [(header.lower(), key) for key, header in TABLE_COLUMNS])
#: The columns of GroqFlow's table, in order (the second is Accuracy or the Spearman coefficient).
_USUAL_ORDER = ("source", "accuracy", "e2e_latency_ms", "e2e_ips", "onchip_latency_ms", "onchip_ips")

COMPILE_INPUT_NOTE = ("GroqFlow measured the groq end-to-end latency and IPS on the inputs given at compile time "
                      "('No inputs received for benchmark'), not over the dataset; the cpu row times the PyTorch "
                      "loop over the dataset. The two rows do not measure the same thing.")
ONCHIP_NOTE = ("On-chip latency excludes moving data between host and GroqChip; end-to-end includes it: quote "
               "end-to-end when comparing with the CPU.")


@dataclass
class _State:
    build: Optional[str] = None
    cached: Optional[bool] = None
    script: Optional[str] = None
    compile_inputs: bool = False
    header: Optional[List[str]] = None
    rows: Dict[str, Dict[str, Optional[float]]] = field(default_factory=dict)
    anything: bool = False
    headerless: bool = False


class GroqReader(LineReader):
    format = "groq"

    def __init__(self, name: str = "<text>") -> None:
        super().__init__(name)
        self.state = _State()

    def _start_build(self, build: str, cached: bool) -> None:
        """A build begins (fresh or from GroqFlow's cache); another build's name starts a new run."""
        if self.state.anything and self.state.build and self.state.build != build:
            self._close(complete=False)
        st = self.state
        st.build = build
        st.cached = cached
        st.anything = True

    def feed(self, line: str) -> None:
        if not line:
            return
        st = self.state
        if line[0] == "|":
            self._table_row(st, line)
            return
        if line[0] == "+" and line.startswith("+--"):
            if st.rows and st.header is not None and ("groq" in st.rows and "cpu" in st.rows or st.headerless):
                self._close(complete=True)  # bottom border after both rows
            return
        if st.header is not None and st.rows:
            # Any other line after a table's rows: that table is over.
            st = self._close(complete=True)
        if "python" in line and ".py" in line:
            m = _SCRIPT.search(line)
            if m:
                if st.anything:
                    st = self._close(complete=False)
                st.script = m.group(1).rsplit("/", 1)[-1]
                st.anything = True
            return
        if "Building" in line:
            m = _BUILDING.search(line)
            if m and not line.startswith("Building wheel") and "(pyproject" not in line:
                self._start_build(m.group(1), cached=False)
            return
        if "found in cache" in line:
            m = _CACHED.search(line)
            if m:
                self._start_build(m.group(1), cached=True)
            return
        if "No inputs received for benchmark" in line:
            st.compile_inputs = True
            st.anything = True

    def _table_row(self, st: _State, line: str) -> None:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0].lower() == "source":
            if st.rows:
                st = self._close(complete=True)
            st.header = [_COLUMNS.get(c.lower(), re.sub(r"\W+", "_", c.lower()).strip("_")) for c in cells]
            st.anything = True
            return
        if st.header is None and len(cells) == len(_USUAL_ORDER) and cells[0].lower() in ("cpu", "groq"):
            # A row pasted without its header: GroqFlow's columns always come in this order.
            minilm = "%" not in cells[1]
            st.header = ["source", "spearman" if minilm else "accuracy"] + list(_USUAL_ORDER[2:])
            st.headerless = True
            st.anything = True
        if st.header is None or len(cells) != len(st.header):
            return
        row: Dict[str, Optional[float]] = {}
        for key, cell in zip(st.header[1:], cells[1:]):
            row[key] = None if cell in ("--", "", "-") else number(cell)
        st.rows[cells[0].lower()] = row

    def _close(self, complete: bool) -> _State:
        st = self.state
        self.state = _State()
        if not st.anything:
            return self.state
        name = " ".join(x for x in (st.build, st.script) if x) or self.name
        minilm = (st.header is not None and "spearman" in st.header) or "minilm" in name.lower()
        run = new_run("groq/minilm" if minilm else "groq/bert_tiny")
        if st.build:
            run.params["build_name"] = st.build
        if st.script:
            run.params["script"] = st.script
        if st.cached is not None:
            run.add_metric("build_cached", st.cached)
        for source, row in sorted(st.rows.items()):
            for key, value in row.items():
                if value is not None:
                    name = "{}_{}".format(source, key)  # units from the exercise's table of metrics
                    run.add_metric(name, value, METRICS.unit(name) if name in METRICS else "")
        if st.headerless:
            run.notes.append("Read from table row(s) without their header: the columns were taken in GroqFlow's "
                             "order (Source, {}, end-to-end latency (ms), end-to-end IPS, on-chip latency (ms), "
                             "on-chip IPS). IPS is inferences per second; latency is per inference.".format(
                                 "Spearman coefficient" if minilm else "Accuracy"))
            if len(st.rows) == 1:
                run.notes.append("Only the {} row was given, so there is no CPU-vs-GroqChip comparison in it.".format(
                    next(iter(st.rows))))
        if complete and st.rows:
            run.status = "complete"
            if st.compile_inputs or "groq" in st.rows:
                run.notes.append(COMPILE_INPUT_NOTE)
            if "groq" in st.rows and st.rows["groq"].get("onchip_ips"):
                run.notes.append(ONCHIP_NOTE)
            cpu, groq = st.rows.get("cpu", {}), st.rows.get("groq", {})
            if cpu.get("e2e_ips") and groq.get("e2e_ips"):
                METRICS.add(run, "groq_vs_cpu_e2e_speedup", round(groq["e2e_ips"] / cpu["e2e_ips"], 2))
        else:
            run.notes.append("No result table: the run was cut short before GroqFlow printed it.")
        if st.cached:
            run.notes.append("The build was loaded from GroqFlow's cache (~/.cache/groqflow), so no compile time "
                             "is included anywhere in this run.")
        self.runs.append(run)
        return self.state

    def finish(self) -> List[Run]:
        self._close(complete=bool(self.state.rows and self.state.header))
        return self.runs
