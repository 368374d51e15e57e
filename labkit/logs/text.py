"""Read a log as clean text lines, streaming, whatever state it is in.

    from labkit.logs.text import open_source, iter_lines
    with open_source("slurm-1234.out") as source:
        for line in iter_lines(source.stream):
            ...

Testbed logs are terminal captures (tqdm's bare ``\\r`` redraws, colour codes, cursor moves,
Windows line ends, Markdown indentation), and some uploads are no text at all: every line comes
out decoded, without escape sequences and stripped, read in bounded pieces (docs/logs.md, "Robustness").
Lines a copy wrapped (a PDF, a web page, a narrow terminal) are joined back by :func:`unwrap`.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass
from typing import IO, Iterable, Iterator, Optional, Union

from labkit.errors import LabkitError
from labkit.files import regular_file

__all__ = ["Source", "open_source", "iter_lines", "unwrap", "BinaryLogError", "MAX_LINE"]

#: Longest piece returned as one line (tqdm lines reach thousands of characters; a file
#: with no line ends at all is cut into pieces of this size rather than read whole).
MAX_LINE = 1 << 20

#: How much of a file is looked at to decide whether it is text at all.
_SNIFF_BYTES = 8192

# CSI sequences (colours, cursor moves, erase), OSC sequences (window titles, ended by BEL or
# ST) and the two-character escapes; script(1) captures of a shell are full of all three.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\r\n]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
# Other control characters that terminals swallow (backspace, bell, NUL...), but not tab.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class BinaryLogError(LabkitError, ValueError):
    """The file is not text (an executable, an image, an archive)."""


def _encoding(head: bytes, binary: str) -> str:
    """UTF-16 when the file starts with its byte-order mark (Windows PowerShell's ``>`` writes
    that), else UTF-8 (with or without a BOM); :class:`BinaryLogError` ``binary`` when it is no text."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    # Text logs decode as UTF-8 or, at worst, carry a few stray bytes; a binary blob of
    # another kind (an image) fails to decode almost everywhere.
    decoded = head.decode("utf-8", errors="replace")
    if b"\x00" in head or decoded.count("\ufffd") > 0.3 * max(1, len(decoded)):
        raise BinaryLogError(binary)
    return "utf-8-sig"


@dataclass
class Source:
    """An opened log: ``stream`` gives text with universal line ends; ``name`` names it."""

    stream: IO[str]
    name: str
    path: Optional[str]

    def __enter__(self) -> "Source":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stream.close()


def open_source(path_or_text: Union[str, bytes, "os.PathLike[str]"]) -> Source:
    """Open a log given as a path, as its text, or as its bytes.

    A ``str`` without a line end is a path when it names an existing file or looks like a file
    name (then a missing file is an error rather than a one-line log). Raises ``FileNotFoundError``
    naming the path, :class:`labkit.files.NotAFile` for a folder, FIFO, device or socket, and
    :class:`BinaryLogError` for non-text files.
    """
    if isinstance(path_or_text, bytes):
        encoding = _encoding(path_or_text[:_SNIFF_BYTES], "<bytes>: binary data, not a text log")
        text = path_or_text.decode(encoding, errors="replace")
        return Source(io.StringIO(text, newline=""), "<bytes>", None)
    is_path = isinstance(path_or_text, os.PathLike)
    path_or_text = os.fspath(path_or_text) if is_path else path_or_text
    if not isinstance(path_or_text, str):
        raise TypeError("path_or_text must be a path, a str or bytes, not {}".format(type(path_or_text).__name__))
    if not (is_path or _looks_like_path(path_or_text)):
        return Source(io.StringIO(path_or_text, newline=""), "<text>", None)
    path = path_or_text
    try:
        regular_file(path, "log")  # a FIFO or a device is refused unopened: reading one may wait for ever
        raw = open(path, "rb")
    except FileNotFoundError:
        raise FileNotFoundError("{}: no such log file".format(path)) from None
    except OSError as exc:
        raise OSError("{}: cannot be opened ({})".format(path, exc.strerror or exc)) from None
    try:
        binary = "{}: binary data (an executable or archive?), not a text log".format(path)
        encoding = _encoding(raw.read(_SNIFF_BYTES), binary)
        raw.seek(0)
    except BaseException:
        raw.close()
        raise
    stream = io.TextIOWrapper(raw, encoding=encoding, errors="replace", newline="")
    return Source(stream, os.path.basename(path), path)


def _looks_like_path(text: str) -> bool:
    if "\n" in text or "\r" in text or not text.strip():
        return False
    if len(text) < 4096 and os.path.exists(text):
        return True
    # A one-line string made only of file-name characters is a path that is missing;
    # anything else (a pasted log line, with blanks, "|", "=", ":") is text.
    return bool(re.fullmatch(r"[\w.~/\\-]+", text)) and ("/" in text or "\\" in text or "." in text)


def iter_lines(stream: IO[str]) -> Iterator[str]:
    """Clean lines of ``stream``: split at ``\\n``, ``\\r\\n`` and bare ``\\r``; no escapes; stripped.

    ``stream`` is opened with ``newline=""`` (:func:`open_source`), so ``readline`` ends a line at any
    of the three and a bare ``\\r`` (a tqdm redraw) is a line. Empty lines are kept (as ``""``); a line
    longer than :data:`MAX_LINE` comes out in pieces of that size, so memory stays bounded.
    """
    for line in iter(lambda: stream.readline(MAX_LINE), ""):
        if "\x1b" in line:
            line = _ANSI.sub("", line)
        yield _CONTROL.sub("", line).strip()


_ENDS_WITH_LABEL = re.compile(r"[A-Za-z_)\]][\w ()/-]*[:=]$")
# A value on its own, not the start of a date or a time ("2024-04-05", "16:21:58").
_STARTS_WITH_VALUE = re.compile(r"^[-+]?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+|nan|inf(?:inity)?)(?=$|[\s,;|%)\]])",
                                re.IGNORECASE)
_ENDS_WITH_NUMBER = re.compile(r"(?:^|[\s=:(\[])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")
_CLOSES = re.compile(r"^[^\[\]]{0,40}\]")
_STARTS_WITH_UNIT = re.compile(
    r"^(?:seconds?\b|secs?\b|samples?/s(?:ec)?\b|samples?\(s\)|sequences?/s|tokens?/s|s/it\b|it/s\b|"
    r"ms/step\b|us/step\b|s/step\b|ms\b|%)")


def _joins(previous: str, line: str) -> bool:
    # The searches anchored at the end of ``previous`` retry from every position of a long line: the
    # last character and the match at the start of ``line`` come first, as they rule out most lines
    # (a 10 MB Groq log: 1.3 s of its 1.9 s were these searches).
    if not previous or not line:
        return False
    if previous.rfind("[") > previous.rfind("]") and _CLOSES.match(line):  # a tqdm/Keras bracket split in two
        return True
    if previous[-1] in ":=" and _STARTS_WITH_VALUE.match(line) and _ENDS_WITH_LABEL.search(previous):
        return True
    ends_with_a_number = previous[-1].isdigit() and _ENDS_WITH_NUMBER.search(previous)
    return bool(ends_with_a_number and _STARTS_WITH_UNIT.match(line))


def unwrap(lines: Iterable[str]) -> Iterator[str]:
    """``lines`` (stripped, as :func:`iter_lines` gives them) with each wrapped value or unit joined back
    onto its line (one space between).

        list(unwrap(["... - loss:", "nan - accuracy: 0.1"]))   # ["... - loss: nan - accuracy: 0.1"]

    Only three shapes are joined, so a real log's line structure is never changed: a line that ends
    with a label (``loss:``, ``GlobalRate=``) and one that starts with a value (a number, ``nan``,
    ``inf``); a line that ends with a number and one that starts with a unit a log prints after a
    number (``seconds``, ``samples/sec``, ``s/it``, ``%``...); a progress bar's bracket split in two
    (``[02:03<00:00,`` / ``12.31s/it]``).
    """
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
