"""Read a log as clean text lines, streaming, whatever state it is in.

    from labkit.logs.text import open_source, iter_lines
    with open_source("slurm-1234.out") as source:
        for line in iter_lines(source.stream):
            ...

Testbed logs are terminal captures (tqdm's bare ``\\r`` redraws, colour codes, cursor moves,
Windows line ends, Markdown indentation), and some uploads are no text at all: every line comes
out decoded, without escape sequences and stripped, read in bounded pieces (docs/logs.md, "Robustness").
"""

from __future__ import annotations

import io
import os
import re
from typing import IO, Iterator, Optional, Union

from labkit.errors import LabkitError

__all__ = ["Source", "open_source", "iter_lines", "BinaryLogError", "MAX_LINE"]

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


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape sequences and stray control characters."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return _CONTROL.sub("", text)


def _encoding(head: bytes, binary: str) -> str:
    """UTF-16 when the file starts with its byte-order mark (Windows PowerShell's ``>`` writes
    that), else UTF-8 (with or without a BOM); :class:`BinaryLogError` ``binary`` when it is no text."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    if _looks_binary(head):
        raise BinaryLogError(binary)
    return "utf-8-sig"


def _looks_binary(head: bytes) -> bool:
    if not head:
        return False
    if b"\x00" in head:
        return True
    # Text logs decode as UTF-8 or, at worst, carry a few stray bytes; a binary blob of
    # another kind (an image) fails to decode almost everywhere.
    decoded = head.decode("utf-8", errors="replace")
    bad = decoded.count("\ufffd")
    return bad > 0.3 * max(1, len(decoded))


class Source:
    """An opened log: ``stream`` gives text with universal line ends; ``name`` names it."""

    def __init__(self, stream: IO[str], name: str, path: Optional[str]) -> None:
        self.stream = stream
        self.name = name
        self.path = path

    def close(self) -> None:
        self.stream.close()

    def __enter__(self) -> "Source":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_source(path_or_text: Union[str, bytes, "os.PathLike[str]"]) -> Source:
    """Open a log given as a path, as its text, or as its bytes.

    A ``str`` without a line end is a path when it names an existing file or looks like a file
    name (then a missing file is an error rather than a one-line log). Raises ``FileNotFoundError``
    or ``IsADirectoryError`` naming the path, and :class:`BinaryLogError` for non-text files.
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
    if os.path.isdir(path):
        raise IsADirectoryError("{}: is a directory, not a log file".format(path))
    try:
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


#: How much text is decoded and cleaned at a time (a quarter million characters: large enough
#: for speed, small enough that memory stays a few megabytes whatever the file's size).
_CHUNK = 1 << 18

# Line ends: \r\n, a bare \r (tqdm redraws) or \n.
_BREAK = re.compile(r"\r\n?|\n")


def iter_lines(stream: IO[str]) -> Iterator[str]:
    """Clean lines of ``stream``: split at ``\\n``, ``\\r\\n`` and bare ``\\r``; no escapes; stripped.

    Escape sequences are removed from a whole piece at once (far faster than line by line). Empty
    lines are kept (as ``""``); a line longer than :data:`MAX_LINE` comes out in pieces of that size.
    """
    carry = ""
    while True:
        try:
            chunk = stream.read(_CHUNK)
        except (UnicodeError, ValueError):  # pragma: no cover - errors="replace" prevents it
            chunk = ""
        if not chunk:
            break
        text = carry + chunk
        del chunk
        # Keep the last, maybe unfinished line (and a final \r that a \n may follow) for later.
        cut = max(text.rfind("\n"), text.rfind("\r", 0, len(text) - 1))
        if cut < 0:
            # No line end yet: wait for one, unless the line is already too long.
            carry = text
            while len(carry) >= MAX_LINE:
                yield strip_ansi(carry[:MAX_LINE]).strip()
                carry = carry[MAX_LINE:]
            continue
        body, carry = text[:cut + 1], text[cut + 1:]
        if body.endswith("\r") and carry.startswith("\n"):
            body, carry = body + "\n", carry[1:]
        del text
        yield from _clean_lines(body)
    if carry:
        yield from _clean_lines(carry)


def _clean_lines(text: str) -> Iterator[str]:
    if "\x1b" in text or "\x00" in text or "\x08" in text or "\x07" in text:
        text = strip_ansi(text)
    lines = _BREAK.split(text)
    del text
    if lines and lines[-1] == "":
        lines.pop()  # the text ended with a line end: no empty line after it
    for line in lines:
        if len(line) > MAX_LINE:
            for i in range(0, len(line), MAX_LINE):
                yield line[i:i + MAX_LINE].strip()
        else:
            yield line.strip()
