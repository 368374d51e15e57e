"""Run one notebook with checked parameters: what ``labkit run`` (:mod:`labkit.execute.cli`) and sweeps call.

    outcome = run_notebook("nb.ipynb", "out.ipynb", {"epochs": 2}, timeout=600)
    outcome.status, outcome.error, outcome.duration

Parameters are checked before a kernel starts (papermill only warns about unknown names and never
checks types): against the :class:`labkit.params.Spec` a notebook's metadata names
(``"labkit": {"spec": "module:ATTR"}``), else against the names and literal defaults of its
``parameters`` cell. The kernel runs in the notebook's own directory. Runs side by side never
race for a port: each kernel talks over Unix-domain sockets in a private directory (ZeroMQ
``ipc``); where that is unavailable (Windows) kernels start one at a time.
Ctrl-C is Kernel -> Interrupt (:class:`labkit.interrupts.runner.CtrlC`).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib
import json
import math
import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from labkit.files import FILE_MODE, NotAFile, regular_file, replace_atomic, temporary_beside
from labkit.interrupts.cell import CAUGHT_IN_KERNEL
from labkit.interrupts.runner import CtrlC
from labkit.params import Param, ParameterError, Spec

__all__ = ["NotebookParameters", "Outcome", "read_notebook", "notebook_parameters", "gather_parameters",
           "run_notebook", "check_timeout", "check_output",
           "COMPLETE", "ERROR", "TIMEOUT", "DEAD_KERNEL", "INTERRUPTED"]

#: Outcome.status values; "interrupted": Ctrl-C under ``run_notebook(..., ctrl_c=True)``.
COMPLETE, ERROR, TIMEOUT, DEAD_KERNEL, INTERRUPTED = "complete", "error", "timeout", "dead kernel", "interrupted"

_LITERAL_TYPES = (bool, int, float, str, list)


@dataclass
class NotebookParameters:
    """The parameters a notebook declares, read without starting a kernel.

    ``spec`` checks the typed ones; ``free`` names (defaults that are not plain literals,
    e.g. ``data_dir = None``) take any YAML value unchecked.
    """

    notebook: str
    spec: Spec
    origin: str
    free: Dict[str, str] = field(default_factory=dict)

    @property
    def names(self) -> List[str]:
        return list(self.spec.params) + list(self.free)

    def describe(self) -> str:
        text = "Parameters of {} ({}):\n{}".format(self.notebook, self.origin, self.spec.describe())
        if self.free:
            text += "\nunchecked (default is not a plain literal): " + ", ".join(
                "{} = {}".format(k, v) for k, v in self.free.items())
        return text

    def _refuse(self, problems: Sequence[str]) -> ParameterError:
        error = ParameterError(list(problems), self.spec.name)
        error.args = (str(error) + "\n\n" + self.describe(),)
        return error

    def from_text(self, pairs: Mapping[str, str]) -> Dict[str, Any]:
        """``-p NAME TEXT`` pairs -> typed values; ParameterError listing every problem."""
        import yaml

        declared = {k: v for k, v in pairs.items() if k not in self.free}
        try:
            values = self.spec.from_text(declared)
        except ParameterError as exc:
            raise self._refuse(exc.problems) from None
        for name in pairs:
            if name in self.free:
                try:
                    values[name] = yaml.safe_load(pairs[name])
                except yaml.YAMLError:
                    values[name] = pairs[name]
        return values

    def check(self, values: Mapping[str, Any]) -> Dict[str, Any]:
        """Typed values (missing ones keep their defaults) -> the same names, converted; the whole
        configuration is validated, so the spec's cross-checks apply too."""
        declared = {k: v for k, v in values.items() if k not in self.free}
        try:
            config = self.spec.validate(declared)
        except ParameterError as exc:
            raise self._refuse(exc.problems) from None
        checked = {k: config[k] for k in declared}
        checked.update({k: v for k, v in values.items() if k in self.free})
        return checked


def _load_spec(reference: str, notebook_dir: str) -> Spec:
    """Import ``module:ATTR``; the notebook's folder is searched too (where its kernel runs)."""
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise ValueError("notebook metadata labkit.spec = {!r}: expected 'module:ATTR'".format(reference))
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        sys.path.insert(0, notebook_dir)
        try:
            module = importlib.import_module(module_name)
        finally:
            sys.path.remove(notebook_dir)
    spec = getattr(module, attr, None)
    if not isinstance(spec, Spec):
        raise ValueError("notebook metadata labkit.spec = {!r}: {} is not a labkit.params.Spec".format(reference, attr))
    return spec


_JSON_KINDS = {list: "a list", dict: "an object", str: "a string", int: "a number", float: "a number",
               bool: "true or false", type(None): "null"}


def read_notebook(path: str) -> Any:
    """The notebook at ``path`` (nbformat 4), or one sentence why it is not one: FileNotFoundError, or a
    ValueError (:class:`labkit.files.NotAFile` for a folder, FIFO or device, which is never opened)."""
    import nbformat

    try:
        regular_file(path, "notebook")
    except FileNotFoundError:
        raise FileNotFoundError("{}: no such notebook".format(path)) from None
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        data = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError("notebook {}: is not a notebook (not JSON: {})".format(path, exc)) from None
    if not isinstance(data, dict):
        raise ValueError("notebook {}: is not a notebook (its JSON is {}, not an object with cells)".format(
            path, _JSON_KINDS.get(type(data), type(data).__name__)))
    cells = data.get("cells")
    if data.get("nbformat", 4) == 4 and not (isinstance(cells, list) and all(isinstance(c, dict) for c in cells)):
        raise ValueError("notebook {}: is not a notebook (its cells are {}, not a list of cells)".format(
            path, "missing" if "cells" not in data else _JSON_KINDS.get(type(cells), type(cells).__name__)
            if not isinstance(cells, list) else "a list holding something other than cells"))
    try:
        return nbformat.reads(text, as_version=4)
    except Exception as exc:  # nbformat's own errors for a malformed notebook are of many kinds
        raise ValueError("notebook {}: nbformat cannot read it ({}: {})".format(
            path, type(exc).__name__, exc)) from None


def notebook_parameters(path: str) -> NotebookParameters:
    """Read a notebook's declared parameters (its spec, else its parameters cell)."""
    nb = read_notebook(path)
    reference = nb.metadata.get("labkit", {}).get("spec")
    if reference:
        spec = _load_spec(reference, os.path.dirname(os.path.abspath(path)))
        return NotebookParameters(path, spec, "declared by " + reference)
    cell = next((cell for cell in nb.cells if cell.get("cell_type") == "code"
                 and "parameters" in cell.get("metadata", {}).get("tags", [])), None)
    if cell is None:
        return NotebookParameters(path, Spec(os.path.basename(path)), "it has no cell tagged 'parameters'")
    params, free = [], {}
    try:
        tree = ast.parse(cell.source)
    except SyntaxError as exc:
        raise ValueError("{}: the parameters cell is not valid Python ({})".format(path, exc)) from None
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if not isinstance(target, ast.Name) or node.value is None:
                continue
            try:
                default = ast.literal_eval(node.value)
            except ValueError:
                free[target.id] = ast.get_source_segment(cell.source, node.value) or "?"
                continue
            if type(default) in _LITERAL_TYPES:
                params.append(Param(target.id, type(default), default))
            else:
                free[target.id] = repr(default)
    return NotebookParameters(path, Spec(os.path.basename(path), *params), "read from its parameters cell", free)


@dataclass
class Outcome:
    """How one notebook run ended: status 'complete' | 'error' | 'timeout' | 'dead kernel' | 'interrupted'."""

    status: str
    error: str = ""
    duration: float = 0.0
    output: str = ""
    #: why the executed notebook could not be kept at ``output`` ("" when it was): what was there stays
    write_error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == COMPLETE


_UNIX_SOCKETS = os.name == "posix"
_START_LOCK = threading.Lock()


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


def _register_engine() -> str:
    """Register papermill engine 'labkit': nbclient with our kernel manager, cwd and env."""
    from jupyter_client.manager import AsyncKernelManager
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine, papermill_engines

    from labkit.execute.upstream import PrivateSocketKernelManager, ctrl_c_client

    class LabkitEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, log_output=False, stdout_file=None,
                                     stderr_file=None, start_timeout=60, execution_timeout=None,
                                     kernel_cwd=None, kernel_env=None, ctrl_c=None, kernel_stderr=None,
                                     **kwargs):
            for name in ("input_path", "timeout", "startup_timeout"):
                kwargs.pop(name, None)
            if ctrl_c is not None:
                kwargs.update(ctrl_c.hooks())
            client_class = ctrl_c_client(PapermillNotebookClient) if ctrl_c is not None else PapermillNotebookClient
            manager_class = PrivateSocketKernelManager if _UNIX_SOCKETS else AsyncKernelManager
            client = client_class(
                nb_man, timeout=execution_timeout, startup_timeout=start_timeout, kernel_name=kernel_name,
                log_output=log_output, stdout_file=stdout_file, stderr_file=stderr_file,
                kernel_manager_class=manager_class, **kwargs)
            start = {"cwd": kernel_cwd, "env": kernel_env}
            if ctrl_c is not None:
                ctrl_c.client = client
                client.ctrl_c, client.kernel_stderr = ctrl_c, kernel_stderr
            if kernel_stderr is not None:
                start["stderr"] = kernel_stderr.fd
            if not _UNIX_SOCKETS:  # pragma: no cover - tcp ports: start one kernel at a time
                with _START_LOCK:
                    return client.execute(**start)
            return client.execute(**start)

    papermill_engines.register("labkit", LabkitEngine)  # the same name again replaces it
    return "labkit"


def _classify(exc: BaseException) -> Tuple[str, str]:
    """(status, cause) for an exception out of papermill/nbclient."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        cause = "{}: {}".format(exc.ename, exc.evalue).strip()
        return ERROR, "cell {}: {}".format(exc.exec_count, cause) if exc.exec_count else cause
    if isinstance(exc, CellTimeoutError):
        return TIMEOUT, "a cell ran longer than the timeout ({})".format(str(exc).splitlines()[0] if str(exc) else "")
    if isinstance(exc, DeadKernelError):
        return DEAD_KERNEL, "the kernel died ({})".format(exc)
    return ERROR, "{}: {}".format(type(exc).__name__, exc)


def check_timeout(timeout: Optional[float], what: str = "timeout") -> Optional[float]:
    """``timeout`` if it is None or a finite number of seconds above 0; else a ValueError naming ``what``."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (math.isfinite(timeout)
                                                                                   and timeout > 0):
        raise ValueError("{} {!r}: must be a finite number of seconds above 0".format(what, timeout))
    return timeout


def run_notebook(notebook: str, output: str, parameters: Optional[Mapping[str, Any]] = None,
                 timeout: Optional[float] = None, cwd: Optional[str] = None,
                 kernel_name: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                 check: bool = True, ctrl_c: bool = False, show_output: bool = False) -> Outcome:
    """Execute ``notebook`` into ``output`` with ``parameters`` and say how it ended.

    ``timeout`` limits each cell, in whole seconds (rounded up); ``cwd`` defaults to the notebook's
    folder; ``env`` adds to this process's environment for the kernel; ``check`` checks the
    parameters first. ``ctrl_c`` (main thread only: ``labkit run``) makes Ctrl-C Kernel -> Interrupt;
    the outcome is then 'interrupted' and its ``error`` says what the interrupt left. ``show_output``
    copies what the cells print to this process. Safe from several threads or processes at once.

    Raises only before the kernel starts: ParameterError, ValueError (a timeout, a file that is not a
    notebook), FileNotFoundError, or OSError when ``output``'s folder cannot be written. After that it
    never raises for a failing notebook: the failure is in the returned :class:`Outcome` and in the
    output notebook. ``output`` is written whole or not at all (a temporary beside it, renamed over it
    once complete); where it cannot be, ``Outcome.write_error`` says why and ``output`` is as it was.
    """
    notebook = os.path.abspath(notebook)
    regular_file(notebook, "notebook")  # a FIFO would block papermill's read for ever
    timeout = check_timeout(timeout)
    parameters = dict(parameters or {})
    if check:
        parameters = notebook_parameters(notebook).check(parameters)
    if cwd is None:
        cwd = os.path.dirname(notebook)
    kernel_env = dict(os.environ)
    # Nobody watches a kernel started here: text bars whatever the parent (a Parsl worker too).
    kernel_env.setdefault("LABKIT_PROGRESS", "text")
    kernel_env.update(env or {})
    target = check_output(notebook, output)
    started = time.monotonic()
    previous = signal.getsignal(signal.SIGINT) if ctrl_c else None
    temporary = _temporary_beside(target)
    try:
        status, error, why_not = _execute(notebook, temporary, parameters, timeout, os.path.abspath(cwd),
                                          kernel_name, kernel_env, ctrl_c, show_output)
        why_not = _keep(temporary, target, why_not)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        if ctrl_c:
            signal.signal(signal.SIGINT, previous)
    return Outcome(status, error, time.monotonic() - started, os.path.abspath(output), why_not)


def check_output(notebook: str, output: str) -> str:
    """The file ``output`` names (through links: that file is replaced, in its own folder); a ValueError
    when it is the source notebook, however spelt, or exists and is not a regular file."""
    target = os.path.realpath(output)
    if target == os.path.realpath(notebook) or (os.path.exists(target) and os.path.samefile(target, notebook)):
        raise ValueError("OUTPUT {}: is the notebook {} itself; name another file (the source is never "
                         "overwritten)".format(output, notebook))
    if os.path.exists(target):
        regular_file(output, "OUTPUT")
    return target


def _temporary_beside(target: str) -> str:
    """An empty file in ``target``'s folder for the run to write to: made before any kernel starts, so
    an output folder that cannot be written is refused (OSError) before anything runs."""
    temporary = temporary_beside(target)
    os.close(os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE))
    return temporary


def _execute(notebook: str, temporary: str, parameters: Dict[str, Any], timeout: Optional[float], cwd: str,
             kernel_name: Optional[str], kernel_env: Dict[str, str], ctrl_c: bool,
             show_output: bool) -> Tuple[str, str, str]:
    """Run the notebook into ``temporary``: (status, error, why it could not be written or "")."""
    import papermill

    from labkit.execute.upstream import close_thread_loop

    engine = _register_engine()
    status, error = COMPLETE, ""
    interrupts = CtrlC() if ctrl_c else None
    kernel_stderr = KernelStderr() if ctrl_c else None
    extra: Dict[str, Any] = {}
    if interrupts:
        kernel_env.update(interrupts.KERNEL_ENV)
        extra.update(ctrl_c=interrupts, kernel_stderr=kernel_stderr)
    if show_output:
        extra.update(stdout_file=sys.stdout, stderr_file=sys.stderr)
    failure: Optional[BaseException] = None
    try:
        with interrupts or contextlib.nullcontext(), kernel_stderr or contextlib.nullcontext():
            papermill.execute_notebook(
                notebook, temporary, parameters=parameters, engine_name=engine, kernel_name=kernel_name,
                progress_bar=False, execution_timeout=int(math.ceil(timeout)) if timeout else None,
                kernel_cwd=cwd, kernel_env=kernel_env, **extra)
    except Exception as exc:  # every failure becomes an outcome; the notebook holds the details
        failure = exc
        status, error = _classify(exc)
    except asyncio.CancelledError as exc:  # a BaseException since Python 3.8: Ctrl-C's second press
        if not (interrupts and interrupts.stopped):
            raise
        failure = exc
    finally:
        if interrupts:  # the run has ended and is being kept (run_notebook restores the handler after)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        close_thread_loop()
    # a write that failed (a full disk) says why the notebook is not whole; a cell's timeout is an OSError too
    why_not = _strerror(failure) if isinstance(failure, OSError) and failure.errno else ""
    if interrupts and interrupts.count:
        try:
            interrupts.mark_stopped(temporary)
        except OSError as exc:
            why_not = why_not or _strerror(exc)
        except ValueError:  # papermill wrote none of it: _keep says so
            pass
        cause = _classify(failure)[1] if isinstance(failure, Exception) else None
        status, error = INTERRUPTED, interrupts.summary(temporary, cause)
    return status, error, why_not


def _keep(temporary: str, target: str, why_not: str) -> str:
    """Rename the executed notebook over ``target`` if it was written whole; else say why not (``why_not``
    where a write failed), "" when kept."""
    try:
        with open(temporary, encoding="utf-8") as f:
            text = f.read()
        whole = isinstance(json.loads(text), dict)
    except OSError as exc:
        return _strerror(exc)
    except ValueError:
        whole = False
    if not whole:
        return why_not or ("it was not written whole" if text else "the run ended before any of it was written")
    try:
        replace_atomic(temporary, target)
    except OSError as exc:
        return _strerror(exc)
    return ""


def _strerror(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _read_yaml(text_or_path: str, what: str) -> Dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(text_or_path)
    except yaml.YAMLError as exc:
        raise ParameterError(["{} is not valid YAML: {}".format(what, exc)]) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ParameterError(["{} must be a mapping of NAME: VALUE, not {}".format(what, type(data).__name__)])
    return data


def gather_parameters(declared: NotebookParameters, pairs: Sequence[Sequence[str]] = (),
                      yaml_text: Optional[str] = None, yaml_file: Optional[str] = None) -> Dict[str, Any]:
    """YAML file, then YAML text, then ``-p`` pairs (later wins), all checked."""
    values: Dict[str, Any] = {}
    if yaml_file:
        try:
            regular_file(yaml_file, "-f")  # a FIFO would keep the command waiting for a writer for ever
            with open(yaml_file) as f:
                values.update(_read_yaml(f.read(), yaml_file))
        except (NotAFile, FileNotFoundError) as exc:
            raise ParameterError([str(exc)]) from None
        except OSError as exc:
            raise ParameterError(["-f {}: cannot read it ({})".format(yaml_file, exc.strerror)]) from None
    if yaml_text:
        values.update(_read_yaml(yaml_text, "-y"))
    values.update(declared.from_text(dict((name, text) for name, text in pairs)))
    return declared.check(values)
