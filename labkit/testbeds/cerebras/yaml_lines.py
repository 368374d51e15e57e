"""A params YAML changed line by line: every other byte (comments, anchors, layout) kept.

A file a student copies from the course has comments, anchors and a layout worth keeping, which
``yaml.safe_dump`` would rewrite. Paths are mapping keys from the top; a list item (``- LinearLR:``)
adds no step, so ("trainer", "init", "schedulers", "LinearLR", "end_learning_rate") names a key
inside a list of schedulers.
"""

from __future__ import annotations

import re
from typing import Any, List, Sequence, Tuple

__all__ = ["key_paths", "find_keys", "scalar_text", "set_scalar", "put_scalar"]

_KEY_LINE = re.compile(r"^(?P<indent> *)(?P<dash>(?:- +)*)(?P<key>[A-Za-z_][\w.\-]*|\"[^\"]*\"|'[^']*')[ \t]*:"
                       r"(?P<gap>[ \t]*)(?P<value>.*)$")


def key_paths(text: str) -> List[Tuple[int, Tuple[str, ...], str]]:
    """(line number, key path, value text) of every ``key: value`` line, in order."""
    found = []
    stack: List[Tuple[int, str]] = []  # (column of the key, key)
    for number, line in enumerate(text.splitlines()):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped in ("---", "..."):
            continue
        m = _KEY_LINE.match(line)
        if not m:
            continue
        column = len(m.group("indent")) + len(m.group("dash"))
        while stack and stack[-1][0] >= column:
            stack.pop()
        key = m.group("key").strip("\"'")
        stack.append((column, key))
        found.append((number, tuple(k for _, k in stack), m.group("value")))
    return found


def find_keys(text: str, path: Sequence[str]) -> List[int]:
    """Line numbers (0-based) of the keys at ``path``; several when a list holds the path more than once."""
    want = tuple(path)
    return [number for number, keys, _ in key_paths(text) if keys == want]


def scalar_text(value: Any) -> str:
    """``value`` as a YAML scalar: True/False, integers, floats that read back as floats (``3.0e-4``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, exponent = text.split("e")
            text = "{}.0e{}".format(mantissa, exponent)  # YAML 1.1 reads "3e-04" as a string
        return text
    raise TypeError("only booleans, integers and floats are written into a params file, not {!r}".format(value))


def set_scalar(text: str, line_number: int, value: Any) -> str:
    """``text`` with the value on line ``line_number`` replaced by ``value`` (a trailing comment is kept)."""
    lines = text.splitlines(keepends=True)
    line = lines[line_number]
    ending = line[len(line.rstrip("\r\n")):]
    m = _KEY_LINE.match(line.rstrip("\r\n"))
    if not m or not m.group("value").strip() or m.group("value").strip().startswith(("&", "*", "[", "{", "|", ">")):
        raise ValueError("line {} holds no scalar value to change: {!r}".format(line_number + 1, line.rstrip()))
    old = m.group("value")
    comment = ""
    hash_at = re.search(r"\s+#", old)
    if hash_at and not old.lstrip().startswith(("'", '"')):
        comment = old[hash_at.start():]
        old = old[:hash_at.start()]
    gap = m.group("gap") or " "
    lines[line_number] = line[:m.start("gap")] + gap + scalar_text(value) + comment + ending
    return "".join(lines)


def put_scalar(text: str, path: Sequence[str], value: Any) -> Tuple[str, bool]:
    """``text`` with the key at ``path`` set to ``value``: changed where it is, else added (with the mappings it
    needs) right under the deepest mapping of ``path`` the file has, indented as that mapping's children; and
    whether the key was there."""
    found = find_keys(text, path)
    if found:
        for number in found:
            text = set_scalar(text, number, value)
        return text, True
    paths = key_paths(text)
    lines = text.splitlines(keepends=True)
    ending = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    depth, after, column, step = 0, len(lines) - 1, 0, 2
    for size in range(len(path) - 1, 0, -1):
        parents = [(number, value_text) for number, keys, value_text in paths if keys == tuple(path[:size])]
        if parents:
            after, value_text = parents[0]
            if value_text.split("#")[0].strip():
                raise ValueError("line {} holds a value, not a mapping to add {} under".format(
                    after + 1, ".".join(path[size:])))
            parent = _column(lines[after])
            children = [number for number, keys, _ in paths if len(keys) == size + 1 and keys[:size] == path[:size]]
            step = _column(lines[children[0]]) - parent if children else 2
            depth, column = size, parent + step
            break
    new = [" " * (column + level * step) + key + ":" + ending for level, key in enumerate(path[depth:-1])]
    new.append(" " * (column + len(new) * step) + path[-1] + ": " + scalar_text(value) + ending)
    if depth == 0:
        if lines and not lines[-1].endswith(("\n", "\r")):
            lines[-1] += ending
        return "".join(lines + new), False
    return "".join(lines[:after + 1] + new + lines[after + 1:]), False


def _column(line: str) -> int:
    """Where a key line's key starts (a list item's dash counted as indentation)."""
    m = _KEY_LINE.match(line.rstrip("\r\n"))
    return len(m.group("indent")) + len(m.group("dash")) if m else len(line) - len(line.lstrip())
