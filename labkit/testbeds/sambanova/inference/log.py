"""The reader labkit.logs uses for pasted chat-completion evidence (format ``"openai"``).

The whole piece is read at its end (a JSON answer spans lines); :mod:`.evidence` does the work.
"""

from __future__ import annotations

import os
from typing import List

from labkit.logs.base import LineReader
from labkit.results import Run
from labkit.testbeds.sambanova.inference.evidence import parse_text

__all__ = ["InferenceReader"]


class InferenceReader(LineReader):
    format = "openai"

    def __init__(self, name: str = "<text>") -> None:
        super().__init__(name)
        self._lines: List[str] = []

    def feed(self, line: str) -> None:
        self._lines.append(line)

    def finish(self) -> List[Run]:
        self.runs = parse_text("\n".join(self._lines), os.path.basename(self.name))
        if not self.runs:
            self.notes.append("No chat completion, streamed transcript or JSON of results was recognised.")
        return self.runs
