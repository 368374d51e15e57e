"""`labkit run`'s side: :class:`CtrlC` around papermill in :func:`labkit.execute.run_notebook` (nbclient
gets its ``hooks()``, the engine sets its ``client``; then ``mark_stopped`` and ``summary``)."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any, Dict, Optional

from labkit.errors import LabkitError
from labkit.interrupts.cell import ASK, RUN_KERNEL

__all__ = ["CtrlC"]


class _StoppedBeforeCell(LabkitError):
    """Ctrl-C came while no cell was running: the next cell does not start."""


class CtrlC:
    """Ctrl-C (SIGINT) while a notebook runs in the main thread acts as Kernel -> Interrupt, as the table
    in :mod:`labkit.interrupts` says. jupyter_client starts every kernel in a session of its own, so the
    terminal's SIGINT reaches this process only; it passes exactly one on to the kernel's process group
    (its children too, as JupyterLab's interrupt does), or none where the kernel shares this group."""

    #: seconds a cell has to end after the second Ctrl-C before the kernel is killed
    STOP_GRACE_S = 2.0
    #: added to the kernel's environment: it notes interrupts between cells (:mod:`labkit.interrupts.cell`)
    KERNEL_ENV = {RUN_KERNEL: "1"}

    def __init__(self) -> None:
        self.client: Any = None
        self.count = 0
        self.stopped = False  # execution was stopped before the notebook's end
        self._executing = False
        self._cell_index: Optional[int] = None  # the cell being run, or about to be
        self._interrupted_cell: Optional[int] = None  # the cell running when the first Ctrl-C was passed on
        self._deadline: Any = None  # after a second Ctrl-C: when to stop waiting for the cell
        self._previous: Any = None
        self.finishing = False  # Ctrl-C between cells: going on only to record the run the kernel holds
        self._told_finishing = False
        self._asking = False  # a question to the kernel is on its way: its answer settles a Ctrl-C between cells
        self._unsettled = False
        self.held_a_run = False  # the kernel's last answer: it holds a run no cell has recorded

    def hooks(self) -> Dict[str, Any]:
        """nbclient hooks: which cell runs, and no new cell after a stop."""
        return {"on_cell_start": self._on_cell_start, "on_cell_execute": self._on_cell_execute,
                "on_cell_executed": self._on_cell_executed}

    async def _on_cell_start(self, cell_index: Optional[int] = None, **_: Any) -> None:
        self._cell_index = cell_index
        if self.count == 1 and not self.stopped:
            await self._ask()
        if self.finishing and not self.held_a_run:  # the run is recorded: stop here
            self.stopped = True
        if self.stopped:
            raise _StoppedBeforeCell("stopped by Ctrl-C before this cell")

    async def _ask(self) -> None:
        """Ask the kernel whether it holds a run and whether a Ctrl-C reached it between cells; tell it
        when labkit run goes on only to record that run."""
        self._asking = True
        try:
            self._told_finishing = self.finishing
            _, told = await self.client.ask_kernel({"labkit": ASK.format(self.finishing)})
            self.heard(told.get("labkit"))
        finally:
            self._asking = False
        if self._unsettled:  # a Ctrl-C came while the question was on its way
            self._unsettled = False
            self.between_cells()

    def heard(self, words: Optional[str]) -> None:
        """The kernel's answer (:func:`labkit.interrupts.cell.answer`'s words, quoted; None: no answer)."""
        if words is None:
            return
        self.held_a_run = "held" in words
        if self.count == 1 and "between" in words:
            self.between_cells()

    def between_cells(self) -> None:
        """The first Ctrl-C came while no cell's code ran: record the run the kernel holds, or stop."""
        if self.stopped or self.finishing:
            return
        if self._asking:
            self._unsettled = True
        elif self.held_a_run:
            self.finishing = True
        else:
            self.stopped = True

    def interrupted_a_cell_after_the_run(self, reply: Any, cell_index: int) -> bool:
        """Whether ``reply`` is an error the first Ctrl-C made (a KeyboardInterrupt, or any error of the cell
        it interrupted: code may turn one into another) while the kernel holds an unrecorded run."""
        content = (reply or {}).get("content", {})
        if self.count != 1 or self.stopped or self.finishing or content.get("status") != "error":
            return False
        return ((content.get("ename") == "KeyboardInterrupt" or cell_index == self._interrupted_cell)
                and self.held_a_run)

    async def _on_cell_execute(self, **_: Any) -> None:
        if self.finishing and not self._told_finishing:  # a Ctrl-C since the question before this cell
            await self._ask()
        self._executing = True

    async def _on_cell_executed(self, **_: Any) -> None:
        self._executing = False
        if self._deadline is not None:  # the cell ended within the grace: nothing to cancel
            self._deadline.cancel()
            self._deadline = None
        if self.count < 2:  # what the cell left: a run no cell has recorded, a Ctrl-C between messages
            await self._ask()

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
        if self.count == 1:
            if running:
                self._interrupted_cell = self._cell_index
            else:
                self.between_cells()
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
        """Give the interrupted cell STOP_GRACE_S to end (a kernel shut down mid-cell prints a ZMQError
        traceback); then stop waiting for it and kill the kernel."""
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
        how = ("stopped at once" if self.stopped and self.count > 1 else
               "stopped once the run was recorded" if self.finishing else
               "stopped before the next cell" if self.stopped else "the kernel was interrupted")
        if kept:
            where = ", ".join(part for part in ("in " + kept[0].stopped_in if kept[0].stopped_in else "",
                                                "at " + kept[0].stopped_at() if kept[0].stopped_at() else "") if part)
            return "{}; the run ended early and is recorded with status interrupted{}".format(
                how, " ({})".format(where) if where else "")
        if runs:
            return "{}; the notebook recorded a run with status {}".format(how, runs[0].status)
        if cause is not None and not self.stopped:
            if self.held_a_run:
                return "{}; it stopped the notebook ({}) before the run it measured was recorded".format(how, cause)
            if "nothing was measured" in cause:  # labkit's own line says it
                return "{}; it stopped the notebook ({})".format(how, cause)
            return "{}; it stopped the notebook ({}): nothing was measured yet, so no run was recorded".format(how, cause)
        if self.count == 1:  # between cells, and the kernel held no run: no run step had a result
            return how + ": nothing was measured yet, so no run was recorded"
        return how + "; no run was recorded"
