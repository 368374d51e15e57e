"""Join lines that a copy broke apart: a value or a unit that fell onto the next line.

    from labkit.logs.unwrap import unwrap
    list(unwrap(["... - loss:", "nan - accuracy: 0.1"]))   # ["... - loss: nan - accuracy: 0.1"]
    list(unwrap(["Processed 1024000 sample(s) in 209.62", "seconds."]))

Logs copied from a PDF, a web page or a narrow terminal wrap long lines. Only these three
shapes are joined, so a real log's line structure is never changed:

- a line that ends with a label (``loss:``, ``GlobalRate=``) followed by a line that starts
  with a value (a number, ``nan``, ``inf``);
- a line that ends with a number followed by a line that starts with a unit a log prints
  after a number (``seconds``, ``samples/sec``, ``s/it``, ``ms/step``, ``%``...);
- a progress bar's bracket split in two (``[02:03<00:00,`` / ``12.31s/it]``).
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator, Optional

__all__ = ["unwrap"]

_ENDS_WITH_LABEL = re.compile(r"[A-Za-z_)\]][\w ()/-]*[:=]$")
# A value on its own, not the start of a date or a time ("2024-04-05", "16:21:58").
_STARTS_WITH_VALUE = re.compile(r"^[-+]?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+|nan|inf(?:inity)?)(?=$|[\s,;|%)\]])",
                                re.IGNORECASE)
_ENDS_WITH_NUMBER = re.compile(r"(?:^|[\s=:(\[])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")
_UNCLOSED = re.compile(r"\[[^\]]*$")
_CLOSES = re.compile(r"^[^\[\]]{0,40}\]")
_STARTS_WITH_UNIT = re.compile(
    r"^(?:seconds?\b|secs?\b|samples?/s(?:ec)?\b|samples?\(s\)|sequences?/s|tokens?/s|s/it\b|it/s\b|"
    r"ms/step\b|us/step\b|s/step\b|ms\b|%)")


def _joins(previous: str, line: str) -> bool:
    if not previous or not line:
        return False
    if _UNCLOSED.search(previous) and _CLOSES.match(line):  # a tqdm/Keras bracket split in two
        return True
    if _ENDS_WITH_LABEL.search(previous) and _STARTS_WITH_VALUE.match(line):
        return True
    return bool(_ENDS_WITH_NUMBER.search(previous) and _STARTS_WITH_UNIT.match(line))


def unwrap(lines: Iterable[str]) -> Iterator[str]:
    """``lines`` with each wrapped value or unit joined back onto its line (one space between)."""
    held: Optional[str] = None
    for line in lines:
        if held is not None and _joins(held, line):
            held = held + ("" if held.endswith("=") else " ") + line  # "Loss=" + "nan": as printed, no blank
            continue
        if held is not None:
            yield held
        held = line
    if held is not None:
        yield held
