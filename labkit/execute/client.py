"""The notebook client `labkit run` drives under :class:`labkit.interrupts.runner.CtrlC`: nbclient's, able
to ask its kernel through a silent execute request (:meth:`ask_kernel`, the one channel CtrlC uses) and
to recover a cell whose reply an interrupt lost; and the kernel's stderr, less interrupt noise."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import threading
import time
from typing import Any, Dict, Optional

from labkit.errors import LabkitError
from labkit.interrupts.cell import ASK, CAUGHT_IN_KERNEL
from labkit.interrupts.runner import CtrlC

__all__ = ["ctrl_c_client", "KernelStderr"]

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
        kernel_stderr: Optional["KernelStderr"] = None

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
            if self.kernel_stderr is not None:
                self.kernel_stderr.exiting.set()
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


class KernelStderr:
    """A pipe for the kernel's own stderr, copied to this process's line by line, less the lines
    ipykernel writes when an interrupt lands in its own code and, once ``exiting`` is set (the kernel
    was told to shut down), libzmq's and ipykernel's as it exits. Closed when the ``with`` block ends."""

    def __init__(self) -> None:
        self.exiting = threading.Event()
        read, self.fd = os.pipe()
        self._forwarder = threading.Thread(target=_forward_stderr, args=(read, self.exiting), daemon=True,
                                           name="labkit-kernel-stderr")
        self._forwarder.start()

    def __enter__(self) -> "KernelStderr":
        return self

    def __exit__(self, *exc: Any) -> None:
        os.close(self.fd)  # the forwarder ends once the kernel has exited too
        self._forwarder.join(timeout=2.0)


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
    """:class:`KernelStderr`'s thread: read ``fd`` until the kernel's end closes it."""
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
