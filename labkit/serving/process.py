"""Starting and stopping the local server from Python (a notebook, a test, a benchmark).

The server is a separate process in its own session, so an interrupt of the kernel does not
reach it; it ends with its parent however the parent ends (docs/serving.md, "Starting and stopping").
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, Optional

import labkit
from labkit.errors import LabkitError
from labkit.llm import MODEL_SIZES
from labkit.serving.configs import API_KEY_ENV, CONFIGS, DEFAULT_MAX_QUEUE, DEFAULT_THREADS, REASONING_FIELDS

__all__ = ["LocalServer", "start_server", "ServerStartError"]


class ServerStartError(LabkitError, RuntimeError):
    """The server process exited, or said nothing, before it was ready."""


class LocalServer:
    """A running local server: ``base_url`` (ends in ``/v1``), ``model``, ``config``, ``pid``;
    a context manager that stops it on leaving the block."""

    def __init__(self, process: "subprocess.Popen[bytes]", ready: Dict[str, Any], log_path: Path,
                 api_key: Optional[str]):
        self.process = process
        self.info = ready
        self.base_url: str = ready["base_url"]
        self.port: int = int(ready["port"])
        self.model: str = ready["model"]
        self.config: str = ready["config"]
        self.pid: int = process.pid
        self.log_path = log_path
        self.api_key = api_key if api_key is not None else "none"  # the openai SDK insists on some key
        self.returncode: Optional[int] = None
        atexit.register(self.stop)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def log(self) -> str:
        """What the server wrote on stderr so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> Optional[int]:
        """Stop the server (closing its lifeline pipe, then SIGTERM, then SIGKILL); its exit status."""
        atexit.unregister(self.stop)
        if self.returncode is not None:
            return self.returncode
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        for action in (None, self.process.terminate, self.process.kill):
            if action is not None:
                with contextlib.suppress(OSError):
                    action()
            try:
                self.returncode = self.process.wait(timeout)
                break
            except subprocess.TimeoutExpired:
                continue
        self.process.stdout.close()
        if self.returncode == 0:  # a clean stop: its log has nothing to tell
            with contextlib.suppress(OSError):
                self.log_path.unlink()
        return self.returncode

    def __enter__(self) -> "LocalServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return "LocalServer({} {}, {}, pid {}, {})".format(self.model, self.config, self.base_url, self.pid,
                                                           "running" if self.alive else "stopped")


def _read_ready(process: "subprocess.Popen[bytes]", timeout: float) -> Optional[Dict[str, Any]]:
    """The ready line the server prints, or None when it exited or the time ran out."""
    lines: "queue.Queue[bytes]" = queue.Queue()
    threading.Thread(target=lambda: lines.put(process.stdout.readline()), daemon=True).start()  # type: ignore
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.1)
        except queue.Empty:
            continue
        try:
            ready = json.loads(line.decode("utf-8"))
        except ValueError:
            return None
        return ready if isinstance(ready, dict) and ready.get("ready") else None
    return None


def start_server(config: str = "batched", model_size: str = "tiny", model_dir: Optional[str] = None,
                 seed: int = 0, max_queue: int = DEFAULT_MAX_QUEUE, max_batch: Optional[int] = None,
                 threads: int = DEFAULT_THREADS, api_key: Optional[str] = None,
                 startup_timeout: float = 120.0, verbose: bool = False, reasoning_tokens: int = 0,
                 reasoning_field: str = REASONING_FIELDS[0]) -> LocalServer:
    """Start the local OpenAI-compatible server and return once it listens (docs/serving.md, "Starting
    and stopping"). ``api_key``, when given, is required from clients (401 otherwise); ``verbose`` logs
    every request in its log; ``reasoning_tokens``: the first that many tokens of every answer are
    reasoning, streamed in ``reasoning_field`` deltas, as gpt-oss answers."""
    if config not in CONFIGS:
        raise ValueError("config={!r}: not one of {}".format(config, sorted(CONFIGS)))
    if model_dir is None and model_size not in MODEL_SIZES:
        raise ValueError("model_size={!r}: not one of {}".format(model_size, sorted(MODEL_SIZES)))
    for name, value, low in (("max_queue", max_queue, 0), ("threads", threads, 1),
                             ("reasoning_tokens", reasoning_tokens, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError("{}={!r}: an integer of {} or more".format(name, value, low))
    if max_batch is not None and (not isinstance(max_batch, int) or max_batch < 1):
        raise ValueError("max_batch={!r}: an integer of 1 or more, or None for the config's".format(max_batch))
    if reasoning_field not in REASONING_FIELDS:
        raise ValueError("reasoning_field={!r}: not one of {}".format(reasoning_field, list(REASONING_FIELDS)))
    if model_dir is not None and not (Path(model_dir) / "config.json").is_file():
        raise ValueError("model_dir={!r}: no config.json there (a save_pretrained directory is needed)".format(
            str(model_dir)))
    env = dict(os.environ)
    root = str(Path(labkit.__file__).resolve().parent.parent)  # the same labkit as this process's
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.pop(API_KEY_ENV, None)
    if api_key is not None:
        env[API_KEY_ENV] = api_key
    command = [sys.executable, "-m", "labkit.serving", "--config", config, "--model-size", model_size,
               "--seed", str(seed), "--max-queue", str(max_queue), "--threads", str(threads), "--watch-stdin",
               "--parent-pid", str(os.getpid())]
    if model_dir is not None:
        command += ["--model-dir", str(model_dir)]
    if max_batch is not None:
        command += ["--max-batch", str(max_batch)]
    if verbose:
        command.append("--verbose")
    if reasoning_tokens:
        command += ["--reasoning-tokens", str(reasoning_tokens), "--reasoning-field", reasoning_field]
    log = tempfile.NamedTemporaryFile(prefix="labkit-serving-", suffix=".log", delete=False)
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                               env=env, start_new_session=(os.name == "posix"))
    log.close()
    ready = _read_ready(process, startup_timeout)
    if ready is None:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdin.close()
        process.stdout.close()
        tail = Path(log.name).read_text(errors="replace").strip().splitlines()[-15:]
        raise ServerStartError("the local server did not start within {:.0f} s (exit status {}); its log, {}:\n{}"
                               .format(startup_timeout, process.returncode, log.name, "\n".join(tail)))
    return LocalServer(process, ready, Path(log.name), api_key)
