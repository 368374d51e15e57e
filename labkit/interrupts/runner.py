"""`labkit run`'s side: :class:`CtrlC` around papermill in :func:`labkit.execute.run_notebook` (nbclient
gets its ``hooks()``, the engine sets its ``client``; then ``mark_stopped`` and ``summary``)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import threading
import time
from typing import Any, Dict, Optional

from labkit.errors import LabkitError
from labkit.interrupts.cell import ASK, CAUGHT_IN_KERNEL, RUN_KERNEL

__all__ = ["CtrlC", "ctrl_c_client"]


class _StoppedBeforeCell(LabkitError):
    """Ctrl-C came while no cell was running: the next cell does not start."""


class CtrlC:
    """Ctrl-C (SIGINT) while a notebook runs in the main thread acts as Kernel -> Interrupt, as the table
    in :mod:`labkit.interrupts` says. jupyter_client starts every kernel in a session of its own, so the
    terminal's SIGINT reaches this process only; it passes exactly one on to the kernel's process group
    (its children too, as JupyterLab's interrupt does), or none where the kernel shares this group."""

    #: seconds a cell has to end after the second Ctrl-C before the kernel is killed
    STOP_GRACE_S = 2.0

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
        self._stderr_fd: Optional[int] = None
        self._forwarder: Optional[threading.Thread] = None
        self.kernel_exiting = threading.Event()  # set when the kernel is told to shut down
        self.held_a_run = False  # the kernel's last answer: it holds a run no cell has recorded

    def kernel_stderr(self) -> int:
        """A file descriptor for the kernel's own stderr: forwarded to this process's, less the lines
        ipykernel writes when an interrupt lands in its own code. Closed when the ``with`` block ends."""
        if self._stderr_fd is None:
            read, self._stderr_fd = os.pipe()
            self._forwarder = threading.Thread(target=_forward_stderr, args=(read, self.kernel_exiting), daemon=True,
                                               name="labkit-kernel-stderr")
            self._forwarder.start()
        return self._stderr_fd

    def kernel_env(self) -> Dict[str, str]:
        """The kernel's environment: it notes interrupts between cells (:mod:`labkit.interrupts.cell`)."""
        return {RUN_KERNEL: "1"}

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
        if self._stderr_fd is not None:
            os.close(self._stderr_fd)  # the forwarder ends once the kernel has exited too
            self._stderr_fd = None
            self._forwarder.join(timeout=2.0)

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
        if self.stopped and self.count > 1:
            how = "stopped at once"
        elif self.finishing:
            how = "stopped once the run was recorded"
        elif self.stopped:
            how = "stopped before the next cell"
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
            if self.held_a_run:
                return "{}; it stopped the notebook ({}) before the run it measured was recorded".format(how, cause)
            if "nothing was measured" in cause:  # labkit's own line says it
                return "{}; it stopped the notebook ({})".format(how, cause)
            return "{}; it stopped the notebook ({}): nothing was measured yet, so no run was recorded".format(how, cause)
        if self.count == 1:  # between cells, and the kernel held no run: no run step had a result
            return how + ": nothing was measured yet, so no run was recorded"
        return how + "; no run was recorded"


#: What ipykernel writes to its stderr when an interrupt lands outside a cell's code: a line, or a
#: line and the task it names (asyncio's report of a task the interrupt cut short).
_KERNEL_NOISE = re.compile("|".join(map(re.escape, (CAUGHT_IN_KERNEL, "Task was destroyed but it is pending",
                                                      "Task exception was never retrieved"))))
_NOISE_DETAIL = re.compile(r"^(task: <Task |future: <Task |Traceback |  File |    |\S*(KeyboardInterrupt|CancelledError|ZMQError)\b)")
#: libzmq's abort when a kernel thread still polls a socket its exit has closed (seen on CI after
#: a second Ctrl-C: "Assertion failed: pfd.revents & POLLIN (src/signaler.cpp:238)"); the kernel
#: was on its way out, and everything it measured is already in the notebook
_EXIT_NOISE = re.compile(r"^Assertion failed: .*\(src/[\w./-]+\.cpp:\d+\)\s*$")
#: the same race in ipykernel's control thread, flushing through a socket the exit has closed: a line
#: and a traceback ending "zmq.error.ZMQError: Socket operation on non-socket" (seen after a Ctrl-C)
_EXIT_TRACEBACK = re.compile(r"^ERROR:tornado\.general:Uncaught exception in ZMQStream callback")


def _forward_stderr(fd: int, exiting: threading.Event) -> None:
    """Copy the kernel's stderr to ours line by line, without ipykernel's interrupt noise
    or libzmq's and ipykernel's when the kernel is shutting down."""
    in_noise = False
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        for raw in iter(pipe.readline, b""):
            line = raw.decode(errors="replace")
            if exiting.is_set() and _EXIT_NOISE.match(line):
                continue
            if _KERNEL_NOISE.search(line) or (exiting.is_set() and _EXIT_TRACEBACK.match(line)):
                in_noise = True
                continue
            if in_noise and _NOISE_DETAIL.match(line):
                continue
            in_noise = False
            try:
                sys.stderr.write(line)
                sys.stderr.flush()
            except (OSError, ValueError):  # our stderr is gone: keep draining the pipe
                pass


#: seconds to wait for a cell's reply once the kernel said it is idle, after an interrupt
REPLY_GRACE_S = 3.0


class _CellNotRun(LabkitError):
    """An interrupt hit the kernel's own code before the cell's code started."""


def ctrl_c_client(client_class: Any) -> Any:
    """``client_class`` (an nbclient NotebookClient) following its ``ctrl_c`` (a :class:`CtrlC`). An
    interrupt ipykernel catches in its own code around a cell leaves the cell without a reply: once
    the kernel is idle REPLY_GRACE_S without one, the kernel is asked whether the cell's code ran (its
    execution count); if not, the cell runs again unless the Ctrl-C stops the notebook."""
    from nbclient.util import ensure_async, run_sync

    class CtrlCClient(client_class):
        ctrl_c: Optional[CtrlC] = None

        def process_message(self, msg: Dict[str, Any], cell: Any, cell_index: int) -> Any:
            if msg.get("msg_type") == "execute_input":
                self._input_count = msg["content"].get("execution_count")
            return super().process_message(msg, cell, cell_index)

        async def async_execute_cell(self, cell: Any, cell_index: int, execution_count: Optional[int] = None,
                                     store_history: bool = True) -> Any:
            self._input_count = None  # before the request goes out: its execute_input may come back at once
            try:
                return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
            except _CellNotRun:
                self._input_count = None
                return await super().async_execute_cell(cell, cell_index, execution_count, store_history)

        execute_cell = run_sync(async_execute_cell)

        async def _check_raise_for_error(self, cell: Any, cell_index: int, exec_reply: Any) -> None:
            ctrl_c = self.ctrl_c
            if ctrl_c is not None and ctrl_c.interrupted_a_cell_after_the_run(exec_reply, cell_index):
                # the first Ctrl-C failed a cell after the run step (a table, a plot of the student's):
                # the cell keeps its error and, as between cells, the notebook goes on only to the
                # cell that records the run
                ctrl_c.between_cells()
                return
            await super()._check_raise_for_error(cell, cell_index, exec_reply)

        async def _async_cleanup_kernel(self) -> None:
            if self.ctrl_c is not None:
                self.ctrl_c.kernel_exiting.set()
            await super()._async_cleanup_kernel()

        # papermill cleans up through the sync setup_kernel, whose _cleanup_kernel wraps the base class's coroutine
        _cleanup_kernel = run_sync(_async_cleanup_kernel)

        async def _async_poll_for_reply(self, msg_id: str, cell: Any, timeout: Any, task_poll_output_msg: Any,
                                        task_poll_kernel_alive: Any) -> Dict[str, Any]:
            waiting = asyncio.ensure_future(super()._async_poll_for_reply(
                msg_id, cell, timeout, task_poll_output_msg, task_poll_kernel_alive))
            idle_since = None
            while True:
                await asyncio.wait({waiting}, timeout=0.25)
                if waiting.done():
                    return waiting.result()
                if not (self.ctrl_c and self.ctrl_c.count and task_poll_output_msg.done()):
                    continue
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since < REPLY_GRACE_S:
                    continue
                waiting.cancel()
                task_poll_kernel_alive.cancel()
                reply, told = await self.ask_kernel({"count": "get_ipython().execution_count",
                                                      "labkit": ASK.format(self.ctrl_c.finishing)}, msg_id)
                if reply is not None:  # it came after all (the shell channel keeps its order)
                    return reply
                self.ctrl_c._executing = False
                self.ctrl_c.heard(told.get("labkit"))
                self.ctrl_c.between_cells()
                try:  # unsure (no count seen, no answer) is "did not run": stop there or run it again
                    ran = self._input_count is not None and int(told["count"]) > self._input_count
                except (KeyError, TypeError, ValueError):
                    ran = False
                if not ran:
                    raise _CellNotRun()
                return {"msg_type": "execute_reply", "parent_header": {"msg_id": msg_id}, "metadata": {},
                        "content": {"status": "ok", "execution_count": self._input_count, "payload": [],
                                    "user_expressions": {}}}

        async def ask_kernel(self, expressions: Dict[str, str], msg_id: Optional[str] = None) -> Any:
            """(``msg_id``'s reply if it comes first, else None; the expressions' values as repr text, {}
            when the kernel did not answer within 30 s), through a silent execute request: it runs no
            cell and leaves the execution count as it is."""
            asked = self.kc.execute("", silent=True, store_history=False, user_expressions=expressions)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    msg = await ensure_async(self.kc.shell_channel.get_msg(timeout=deadline - time.monotonic()))
                except Exception:  # queue.Empty: the kernel did not answer
                    break
                parent = msg["parent_header"].get("msg_id")
                if msg_id is not None and parent == msg_id:
                    return msg, {}
                if parent == asked:
                    found = msg["content"].get("user_expressions", {})
                    return None, {name: value.get("data", {}).get("text/plain") for name, value in found.items()
                                  if value.get("status") == "ok"}
            return None, {}

    return CtrlCClient
