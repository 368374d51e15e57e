"""Where ``labkit run`` uses private methods of nbclient and jupyter_client, and the check that they
are still there as labkit expects, made at import.

Their public APIs do not serve three things the interrupt contract needs (docs/interrupts.md):
waiting for a cell's reply that an interrupt lost (``NotebookClient._async_poll_for_reply``), letting
a cell after the run step keep an interrupt's error without stopping the notebook
(``_check_raise_for_error``: nbclient's hooks run before it and cannot veto it), and shutting a kernel
down without interrupting it first (``AsyncKernelManager._async_interrupt_kernel``). A release that
renames or re-signs one of these fails here, in one sentence naming the package and its version,
instead of in a student's Ctrl-C; ``make test-prerelease`` runs the execution and interrupt tests
against the newest pre-releases so that CI sees such a release first.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
import tempfile
import threading
import time
from importlib.metadata import version
from typing import Any, Dict, Optional, Sequence, Tuple

from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.util import ensure_async, run_sync

from labkit.errors import LabkitError
from labkit.interrupts.cell import ASK
from labkit.interrupts.runner import CtrlC

__all__ = ["UpstreamChanged", "PRIVATE", "check", "PrivateSocketKernelManager", "ctrl_c_client", "close_thread_loop"]


class UpstreamChanged(LabkitError, ImportError):
    """A private method labkit overrides is gone or takes other parameters in the installed release."""

    shown_as = ""


#: (distribution, class, method, its parameters): every private name labkit overrides or calls.
PRIVATE: Tuple[Tuple[str, type, str, Tuple[str, ...]], ...] = (
    ("nbclient", NotebookClient, "_async_poll_for_reply",
     ("self", "msg_id", "cell", "timeout", "task_poll_output_msg", "task_poll_kernel_alive")),
    ("nbclient", NotebookClient, "_check_raise_for_error", ("self", "cell", "cell_index", "exec_reply")),
    ("nbclient", NotebookClient, "_async_cleanup_kernel", ("self",)),  # and _cleanup_kernel, its sync wrapper
    ("jupyter_client", AsyncKernelManager, "_async_interrupt_kernel", ("self",)),
    ("jupyter_client", AsyncKernelManager, "_async_cleanup_resources", ("self", "restart")),
)


def check(private: Sequence[Tuple[str, type, str, Tuple[str, ...]]] = PRIVATE) -> None:
    """Raise :class:`UpstreamChanged` for the first method in ``private`` that is missing, is not a
    coroutine function, or whose parameters differ."""
    for package, cls, name, expected in private:
        method = getattr(cls, name, None)
        found = tuple(inspect.signature(method).parameters) if callable(method) else None
        if found == expected and inspect.iscoroutinefunction(method):
            continue
        installed = version(package)
        now = "gone" if found is None or not inspect.iscoroutinefunction(method) else "({})".format(", ".join(found))
        raise UpstreamChanged(
            "{0} {1} changed a method labkit run overrides: {2}.{3}({4}) is now {5}; install an earlier {0} "
            "(pip install '{0}<{1}')".format(package, installed, cls.__name__, name, ", ".join(expected), now))


check()


class PrivateSocketKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose sockets live in a private directory (no ports to race for): ZeroMQ
    ipc transport in a directory of this kernel's own, short (under /tmp) to keep socket paths under
    the 104-byte limit of macOS and Linux."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        # $TMPDIR where /tmp is not writable (the grader's sandbox, which re-runs notebooks;
        # under Landlock os.access still says yes, so the folder is tried, not asked about)
        try:
            self._socket_dir = tempfile.mkdtemp(prefix="lk-", dir="/tmp")
        except OSError:
            self._socket_dir = tempfile.mkdtemp(prefix="lk-")
        self.transport = "ipc"
        self.ip = os.path.join(self._socket_dir, "k")

    async def _async_interrupt_kernel(self) -> None:
        # jupyter_client interrupts a kernel before shutting it down. On a busy machine the
        # kernel may still be inside the last cell's handler then, and it logs
        # "KeyboardInterrupt caught in kernel" to the terminal (after a Ctrl-C in `labkit run`
        # a second line). The shutdown needs no interrupt: the control channel, then SIGTERM
        # and SIGKILL, end the kernel. Interrupts asked for outside a shutdown go through.
        if getattr(self, "shutting_down", False):  # set by jupyter_client >= 7 while shutting down
            return
        await super()._async_interrupt_kernel()

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            shutil.rmtree(self._socket_dir, ignore_errors=True)

    cleanup_resources = _async_cleanup_resources


#: seconds to wait for a cell's reply once the kernel said it is idle, after an interrupt
REPLY_GRACE_S = 3.0


class _CellNotRun(LabkitError):
    """An interrupt hit the kernel's own code before the cell's code started."""


def ctrl_c_client(client_class: Any) -> Any:
    """``client_class`` (an nbclient NotebookClient) following its ``ctrl_c`` (a :class:`CtrlC`). An
    interrupt ipykernel catches in its own code around a cell leaves the cell without a reply: once
    the kernel is idle REPLY_GRACE_S without one, the kernel is asked whether the cell's code ran (its
    execution count); if not, the cell runs again unless the Ctrl-C stops the notebook."""

    class CtrlCClient(client_class):
        ctrl_c: Optional[CtrlC] = None
        kernel_stderr: Any = None  # a labkit.execute.KernelStderr

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


def close_thread_loop() -> None:
    """Close the event loop jupyter_core made for a worker thread (it never closes it itself); the main
    thread's is reused by every later run, so it stays open."""
    if threading.current_thread() is threading.main_thread():
        return
    try:
        from jupyter_core.utils import ensure_event_loop
    except ImportError:  # pragma: no cover - older jupyter_core keeps no per-thread loop
        return
    loop = ensure_event_loop()  # this thread's loop (a closed one is replaced first, then closed here)
    if not loop.is_running() and not loop.is_closed():
        loop.close()
        asyncio.set_event_loop(None)
