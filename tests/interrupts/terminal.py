"""`labkit run NOTEBOOK OUTPUT --show-output` as a terminal runs it, pressed Ctrl-C at a moment its output shows.

    run = Terminal(notebook, output, ["-p", "epochs", "2"], cwd=tmp_path)
    run.wait_for(r"Epoch 1/2: [0-9.]+ s")      # reads the output as it comes, frame by frame
    run.ctrl_c()                               # SIGINT to the foreground process group
    ended = run.finish()                       # exit status, what it printed

The run gets a session of its own, so its process group stands for the terminal's foreground
group and a Ctrl-C reaches `labkit run` (and whatever shares its group) exactly as a terminal's
does. A progress bar redraws its line with ``\\r``: each frame is matched on its own.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["Ended", "Terminal"]


@dataclass
class Ended:
    """How a run ended: its exit status and what it printed."""

    code: int
    stdout: str
    stderr: str

    @property
    def stderr_lines(self) -> List[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


class Terminal:
    """`labkit run ... --show-output` in a process group of its own; its stdout read as it comes."""

    def __init__(self, notebook: Path, output: Path, arguments: Sequence[str], cwd: Path):
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "labkit", "run", str(notebook), str(output), "--show-output", *arguments],
            cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.seen = b""
        self._frames_read = 0  # frames already matched (the last, unfinished one is matched again)

    def frames(self) -> List[str]:
        """What was printed so far, one entry per line or progress-bar frame."""
        return re.split(r"[\r\n]", self.seen.decode(errors="replace"))

    def wait_for(self, pattern: str, within: float = 1200.0) -> str:
        """Read until a frame matches ``pattern`` (a regular expression); that frame.

        Fails, quoting the output's end, when the run ends first or ``within`` seconds pass.
        """
        wanted = re.compile(pattern)
        deadline = time.monotonic() + within
        fd = self.process.stdout.fileno()
        while True:
            frames = self.frames()
            for frame in frames[self._frames_read:]:
                if wanted.search(frame):
                    self._frames_read = len(frames) - 1
                    return frame
            self._frames_read = max(len(frames) - 1, 0)
            left = deadline - time.monotonic()
            assert left > 0, "no {!r} within {:.0f} s; printed:\n{}".format(pattern, within, self.tail())
            ready, _, _ = select.select([fd], [], [], left)
            chunk = os.read(fd, 65536) if ready else b""
            if ready and not chunk:
                self.process.wait()
                raise AssertionError("labkit run ended (exit {}) before {!r}; printed:\n{}\n{}".format(
                    self.process.returncode, pattern, self.tail(), self.process.stderr.read().decode()))
            self.seen += chunk

    def tail(self, chars: int = 3000) -> str:
        return "\n".join(f for f in self.frames() if f.strip())[-chars:]

    def ctrl_c(self) -> None:
        """SIGINT to the run's process group, as a terminal sends it to its foreground group."""
        os.killpg(self.process.pid, signal.SIGINT)

    def finish(self, within: float = 600.0) -> Ended:
        try:
            out, err = self.process.communicate(timeout=within)
        finally:
            self.kill()
        return Ended(self.process.returncode, (self.seen + out).decode(errors="replace"), err.decode(errors="replace"))

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for pipe in (self.process.stdout, self.process.stderr):
            pipe.close()
