"""The Parsl executor: a sweep's tasks on whatever a Parsl config provides (a Slurm or PBS allocation, local workers).

    labkit sweep NOTEBOOK ... --executor parsl --config docs/parsl/slurm_testbed.py

Each task runs :func:`labkit.sweep.task.execute_task` on a Parsl worker, which writes the
run's row into ``--out`` (so ``--out`` must be on a file system the workers share).
:func:`parsl_map` is shared with ``labkit grade --executor parsl``.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, as_completed
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from labkit.files import NotAFile, regular_file
from labkit.params import existing_file
from labkit.sweep.planning import SweepError
from labkit.sweep.task import row_of

__all__ = ["load_parsl_config", "parsl_map", "run_parsl"]


def load_parsl_config(path: Optional[str]):
    """The ``config`` object of a Parsl config file (a Python file); errors name ``--config``."""
    import importlib.util

    if not path:
        raise SweepError("--executor parsl needs --config FILE, a Python file defining `config` "
                         "(ready ones: docs/parsl/local.py, slurm_testbed.py, polaris_pbs.py)")
    try:
        regular_file(path, "--config")  # a FIFO would block the import for ever
    except NotAFile as exc:
        raise SweepError("{}; it must be a Python file defining `config`, a parsl Config (see docs/parsl/)".format(
            exc)) from None
    except FileNotFoundError:
        pass  # said below, with where relative paths start
    problem = existing_file(path)
    if problem:
        raise SweepError("--config {}: {}; it must be a Python file defining `config`, a parsl Config "
                         "(see docs/parsl/)".format(path, problem))
    try:
        from parsl.config import Config
    except ImportError:
        raise SweepError("--executor parsl needs Parsl: pip install 'parsl>=2023.1' (labkit[cluster])") from None
    spec = importlib.util.spec_from_file_location("labkit_parsl_config", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as exc:
        raise SweepError("--config {}: it failed to load: {}: {}".format(path, type(exc).__name__, exc)) from None
    config = getattr(module, "config", None)
    if not isinstance(config, Config):
        raise SweepError("--config {}: it must define `config = parsl.config.Config(...)`; found {}".format(
            path, type(config).__name__))
    return config


def _parsl_task(task: Mapping[str, Any]) -> Dict[str, Any]:
    """Runs on a Parsl worker. HighThroughputExecutor(available_accelerators=...) pins the GPU."""
    from labkit.sweep.task import execute_task

    gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
    return execute_task(task, env={"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else None)


def parsl_map(function: Callable[[Dict[str, Any]], Any], items: Sequence[Mapping[str, Any]], config: Any,
              out: str) -> Iterator[Tuple[Mapping[str, Any], Future]]:
    """``function(item)`` for each item on ``config``'s workers; yields ``(item, future)`` as each ends.

    Parsl's logs are kept under ``out/parsl``. Shared by ``labkit sweep`` and ``labkit grade --executor parsl``.
    """
    import parsl

    if getattr(config, "run_dir", "runinfo") == "runinfo":  # keep Parsl's logs with the sweep
        config.run_dir = os.path.join(os.path.abspath(out), "parsl")
    dfk = parsl.load(config)
    log_files = _parsl_log_handlers(config.run_dir)
    try:
        app = parsl.python_app(function, data_flow_kernel=dfk)
        futures = {app(dict(item)): item for item in items}
        for future in as_completed(list(futures)):
            yield futures[future], future
    finally:
        dfk.cleanup()
        parsl.clear()
        for logger, handler in log_files:  # Parsl detaches its parsl.log handler without closing it
            logger.removeHandler(handler)
            handler.close()


def run_parsl(tasks: Sequence[Mapping[str, Any]], config: Any, out: str,
              on_row: Callable[[Dict[str, Any]], None]) -> None:
    for task, future in parsl_map(_parsl_task, tasks, config, out):
        on_row(row_of(future, task))


def _parsl_log_handlers(run_dir: str) -> List[Tuple[Any, Any]]:
    """(logger, handler) pairs writing files under this sweep's Parsl run directory."""
    import logging

    found = []
    loggers = [logging.getLogger()] + [lg for lg in logging.root.manager.loggerDict.values()
                                       if isinstance(lg, logging.Logger)]
    for logger in loggers:
        for handler in logger.handlers:
            if os.path.abspath(getattr(handler, "baseFilename", "/")).startswith(os.path.abspath(run_dir)):
                found.append((logger, handler))
    return found
