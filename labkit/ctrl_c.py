"""Ctrl-C in ``labkit run`` is Kernel -> Interrupt: :class:`CtrlC`, used by :func:`labkit.execute.run_notebook`.

    with CtrlC() as interrupts:       # in the main thread, around papermill.execute_notebook
        ...                           # nbclient gets interrupts.hooks(); interrupts.client is set by the engine
    interrupts.mark_stopped(output); interrupts.summary(output, cause)
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any, Dict, Optional

from labkit.errors import LabkitError

__all__ = ["CtrlC"]


class _StoppedBeforeCell(LabkitError):
    """Ctrl-C came while no cell was running: the next cell does not start."""


class CtrlC:
    """Ctrl-C (SIGINT) while a notebook runs in the main thread acts as Kernel -> Interrupt.

    jupyter_client starts every kernel in a session of its own, so the SIGINT a terminal sends
    to its foreground process group reaches this process only; the handler passes exactly one
    SIGINT on to the kernel's process group (its children too, as JupyterLab's interrupt does).
    Where a kernel shares this process group it already got the terminal's signal and is
    sent nothing more.

    - first Ctrl-C, a cell running: the kernel is interrupted and execution goes on, so a
      training loop ends the run gracefully and the cells after it show and record it;
    - first Ctrl-C, no cell running (the kernel starting, between cells): no further cell starts;
    - second Ctrl-C: the kernel is interrupted again and no further cell starts; a cell that does
      not end within STOP_GRACE_S is given up and the kernel killed. Later ones are ignored.
    """

    #: seconds a cell has to end after the second Ctrl-C before the kernel is killed
    STOP_GRACE_S = 2.0

    def __init__(self) -> None:
        self.client: Any = None
        self.count = 0
        self.stopped = False  # execution was stopped before the notebook's end
        self._executing = False
        self._cell_index: Optional[int] = None  # the cell being run, or about to be
        self._deadline: Any = None  # after a second Ctrl-C: when to stop waiting for the cell
        self._previous: Any = None

    def hooks(self) -> Dict[str, Any]:
        """nbclient hooks: which cell runs, and no new cell after a stop."""
        return {"on_cell_start": self._on_cell_start, "on_cell_execute": self._on_cell_execute,
                "on_cell_executed": self._on_cell_executed}

    def _on_cell_start(self, cell_index: Optional[int] = None, **_: Any) -> None:
        self._cell_index = cell_index
        if self.stopped:
            raise _StoppedBeforeCell("stopped by Ctrl-C before this cell")

    def _on_cell_execute(self, **_: Any) -> None:
        self._executing = True

    def _on_cell_executed(self, **_: Any) -> None:
        self._executing = False
        if self._deadline is not None:  # the cell ended within the grace: nothing to cancel
            self._deadline.cancel()
            self._deadline = None

    def __enter__(self) -> "CtrlC":
        self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc: Any) -> None:
        signal.signal(signal.SIGINT, self._previous if self._previous is not None else signal.default_int_handler)

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.count += 1
        if self.count > 2:
            return
        running = self._executing and self._interrupt_kernel()
        if self.count == 1 and running:
            return
        self.stopped = True
        if running:
            self._stop_waiting()

    def _interrupt_kernel(self) -> bool:
        """SIGINT to the kernel's process group; False when there is no kernel to send it to."""
        km = getattr(self.client, "km", None)
        provisioner = getattr(km, "provisioner", None)
        process = getattr(provisioner, "process", None)
        if process is None or process.poll() is not None:
            return False
        if not hasattr(os, "killpg") or getattr(km, "interrupt_mode", "signal") != "signal":  # pragma: no cover
            try:  # Windows, or a kernel interrupted by message: jupyter_client's own way, on the loop
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return False
            loop.call_soon_threadsafe(lambda: asyncio.ensure_future(km.interrupt_kernel()))
            return True
        try:
            group = os.getpgid(process.pid)
            if group != os.getpgrp():
                os.killpg(group, signal.SIGINT)
        except OSError:  # it has just exited
            return False
        return True

    def _stop_waiting(self) -> None:
        """Give the interrupted cell STOP_GRACE_S to end; then stop waiting for it and kill the kernel.

        A kernel told to shut down while its cell still runs prints a ZMQError traceback (its
        reply goes to a closed socket), so it gets the moment to end the cell first.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # between two waits: the next cell does not start
            return
        client = self.client

        def cancel() -> None:
            self._deadline = None
            if not self._executing:  # the cell ended meanwhile
                return
            self._executing = False
            client.shutdown_kernel = "immediate"  # it did not answer the interrupt
            for task in asyncio.all_tasks(loop):
                task.cancel()

        def arm() -> None:
            if self._executing:
                self._deadline = loop.call_later(self.STOP_GRACE_S, cancel)

        # call_soon_threadsafe wakes the loop at once (a signal handler's call_later would wait for its next event)
        loop.call_soon_threadsafe(arm)

    def mark_stopped(self, output: str) -> None:
        """After a stop, the output notebook says where: papermill marks every cell 'completed'
        when execution ends with an exception of its own (not a cell's error)."""
        import nbformat

        if not self.stopped or self._cell_index is None or not os.path.exists(output):
            return
        nb = nbformat.read(output, as_version=4)
        if nb.metadata.get("papermill", {}).get("exception"):  # a cell's own error already says where
            return
        code = [i for i in range(self._cell_index, len(nb.cells)) if nb.cells[i].cell_type == "code"]
        if not code:
            return
        cell = nb.cells[code[0]]
        why = "a second Ctrl-C" if self.count > 1 else "Ctrl-C between cells"
        cell.outputs.append(nbformat.v4.new_output("error", ename="KeyboardInterrupt", traceback=[],
                                                   evalue="labkit run stopped here ({})".format(why)))
        cell.metadata.setdefault("papermill", {})["status"] = "failed"
        for later in nb.cells[code[0] + 1:]:
            later.metadata.setdefault("papermill", {})["status"] = "pending"
        nb.metadata.setdefault("papermill", {})["exception"] = True
        nbformat.write(nb, output)

    def summary(self, output: str, cause: Optional[str]) -> str:
        """What the interrupt left, for the one line ``labkit run`` prints (``cause``: why papermill
        stopped, when it raised)."""
        from labkit import results

        try:
            runs = results.read(output).runs if os.path.exists(output) else []
        except ValueError:
            runs = []
        kept = [run for run in runs if run.status == "interrupted"]
        if self.stopped:
            how = "stopped at once" if self.count > 1 else "stopped before the next cell"
        else:
            how = "the kernel was interrupted"
        if kept:
            where = ", ".join(part for part in ("in " + kept[0].stopped_in if kept[0].stopped_in else "",
                                                "at " + kept[0].stopped_at() if kept[0].stopped_at() else "") if part)
            return "{}; the run ended early and is recorded with status interrupted{}".format(
                how, " ({})".format(where) if where else "")
        if runs:
            return "{}; the notebook recorded a run with status {}".format(how, runs[0].status)
        if cause is not None and not self.stopped:
            return "{}; it stopped the notebook ({}), so no run was recorded".format(how, cause)
        return how + "; no run was recorded"
