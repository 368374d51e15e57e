"""A student at JupyterLab, driven through a real kernel (jupyter_client): run one cell, edit
the parameters cell and run it alone, press Kernel -> Interrupt while a cell runs.

    with Student("notebooks/graphcore/mnist.ipynb", {"epochs": 2}) as student:
        student.run_through("graphcore.run_exercise(config)")     # every cell above the run step
        student.edit(learning_rate=0.5)               # the parameters cell, edited and run alone
        outputs = student.run_cell("graphcore.run_exercise(config)")
"""

from __future__ import annotations

import ast
import os
import queue
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import nbformat
import psutil
from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parent.parent

#: Processes multiprocessing keeps on purpose (one each, reused by every run): not leaks.
HELPERS = ("forkserver", "resource_tracker")


class Outputs:
    """What one cell execution showed."""

    def __init__(self) -> None:
        self.messages: List[Dict[str, Any]] = []

    @property
    def text(self) -> str:
        """Printed text as it reads (a progress frame is replaced by the next: text after the last \\r)."""
        raw = "".join(m["content"]["text"] for m in self.messages if m["msg_type"] == "stream")
        return "\n".join(line.rsplit("\r", 1)[-1] for line in raw.split("\n"))

    @property
    def errors(self) -> List[Dict[str, Any]]:
        return [m["content"] for m in self.messages if m["msg_type"] == "error"]

    @property
    def shown(self) -> str:
        """Error lines as Jupyter renders them, plus every text/plain and text/html output."""
        parts = ["\n".join(e["traceback"]) for e in self.errors]
        for m in self.messages:
            if m["msg_type"] in ("execute_result", "display_data"):
                data = m["content"]["data"]
                parts.append(data.get("text/html") or data.get("text/plain", ""))
        return "\n".join(parts)

    def count(self, mime: str) -> int:
        return sum(1 for m in self.messages if m["msg_type"] in ("execute_result", "display_data")
                   and mime in m["content"]["data"])


class Student:
    def __init__(self, notebook: str, parameters: Optional[Dict[str, Any]] = None, cwd: Optional[str] = None):
        nb = nbformat.read(str(ROOT / notebook), as_version=4)
        self.cells = [c.source for c in nb.cells if c.cell_type == "code"]
        self.parameters_index = next(i for i, c in enumerate(c for c in nb.cells if c.cell_type == "code")
                                     if "parameters" in c.metadata.get("tags", []))
        self.values: Dict[str, Any] = {}
        for node in ast.parse(self.cells[self.parameters_index]).body:
            self.values[node.targets[0].id] = ast.literal_eval(node.value)
        self.values.update(parameters or {})
        self.cwd = cwd
        self.km: Any = None
        self.kc: Any = None

    def __enter__(self) -> "Student":
        self.km = KernelManager(kernel_name="python3")
        env = dict(os.environ)
        # One torch thread: on a machine shared by several test runs, two spinning OpenMP threads
        # per kernel make a step 20x slower; what is tested here does not depend on threads.
        env.setdefault("OMP_NUM_THREADS", "1")
        self.km.start_kernel(cwd=self.cwd, env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    # --- what a student does ---------------------------------------------------------
    def parameters_cell(self) -> str:
        """The parameters cell as the student has typed it (one assignment a line)."""
        return "\n".join("{} = {!r}".format(name, value) for name, value in self.values.items())

    def cell(self, containing: str) -> str:
        found = [c for c in self.cells if containing in c]
        assert len(found) == 1, "{!r} is in {} cells".format(containing, len(found))
        return found[0]

    def run_through(self, containing: str, timeout: float = 600) -> List[Outputs]:
        """Run every cell from the top down to (not including) the one containing ``containing``;
        the parameters cell as :meth:`parameters_cell` reads."""
        stop = self.cells.index(self.cell(containing))
        shown = []
        for index in range(stop):
            source = self.parameters_cell() if index == self.parameters_index else self.cells[index]
            shown.append(self.execute(source, timeout))
            assert not shown[-1].errors, "cell {} failed:\n{}".format(index, shown[-1].shown)
        return shown

    def edit(self, **values: Any) -> Outputs:
        """Edit the parameters cell and run that cell only."""
        self.values.update(values)
        return self.execute(self.parameters_cell())

    def delete(self, name: str) -> Outputs:
        """Delete a line of the parameters cell, and the name from the kernel (as a restarted
        cell order would leave it)."""
        del self.values[name]
        return self.execute(self.parameters_cell() + "\ndel {}".format(name))

    def run_cell(self, containing: str, timeout: float = 600) -> Outputs:
        return self.execute(self.cell(containing), timeout)

    # --- the kernel ----------------------------------------------------------------
    def execute(self, source: str, timeout: float = 600, interrupt_when: Any = None,
                interrupts: int = 1, interrupt_after: Optional[float] = None) -> Outputs:
        """Run ``source``; with ``interrupt_when`` (a text, or a compiled regular expression), press
        Kernel -> Interrupt (``interrupts`` times) as soon as it has been printed; with
        ``interrupt_after``, that many seconds in."""
        msg_id = self.kc.execute(source)
        outputs = Outputs()
        start = time.monotonic()
        deadline = start + timeout
        sent = 0
        while True:
            if interrupt_after is not None and not sent and time.monotonic() - start >= interrupt_after:
                self.km.interrupt_kernel()
                sent = 1
            wait = deadline - time.monotonic() if sent or interrupt_after is None else 0.05
            try:
                msg = self.kc.get_iopub_msg(timeout=max(0.05, wait))
            except queue.Empty:
                if time.monotonic() < deadline:
                    continue
                raise AssertionError("the cell did not finish in {} s:\n{}".format(timeout, source)) from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                return outputs
            if kind in ("stream", "error", "execute_result", "display_data"):
                outputs.messages.append(msg)
            if interrupt_when and sent < interrupts and _shows(outputs.text, interrupt_when):
                for _ in range(interrupts):
                    self.km.interrupt_kernel()
                    sent += 1
                    time.sleep(0.05)

    def value(self, expression: str) -> Any:
        """``expression`` evaluated in the kernel, read back with ast.literal_eval."""
        out = self.execute("print(repr(({})))".format(expression))
        assert not out.errors, out.shown
        return ast.literal_eval(out.text.strip())

    @property
    def process(self) -> psutil.Process:
        return psutil.Process(self.km.provisioner.process.pid)

    def rss_mb(self) -> float:
        return self.process.memory_info().rss / 2**20

    def leftover_children(self) -> List[str]:
        """The kernel's child processes, other than multiprocessing's reusable helpers."""
        found = []
        for child in self.process.children():
            line = _cmdline(child)
            if line is not None and not any(helper in line for helper in HELPERS):
                found.append("{} {}".format(child.pid, line[:200]))
            # a process forked from the fork server has its command line: every descendant counts
            for below in child.children(recursive=True):
                below_line = _cmdline(below)
                if below_line is not None:
                    found.append("{} {}".format(below.pid, below_line[:200]))
        return found


def _cmdline(process: psutil.Process) -> Optional[str]:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:  # gone meanwhile
        return None


def _shows(text: str, wanted: Any) -> bool:
    """Whether ``text`` (progress frames split at carriage returns) shows ``wanted``: a text or a compiled pattern."""
    return bool(wanted.search(text.replace("\r", "\n"))) if hasattr(wanted, "search") else wanted in text
