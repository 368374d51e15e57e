"""Duplicate evidence: the same log, record, sweep or notebook handed in by two students.

A record is fingerprinted only when it holds measured timings (two honest runs never time the
same to the last digit; a deterministic accuracy proves nothing), a handout or empty file never.
Duplicates are flagged, never penalised (docs/grading.md, "After grading").
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

__all__ = ["file_fingerprints", "record_fingerprints", "find_duplicates", "handout_hashes", "gradebook_note", "groups"]

#: Files larger than this are fingerprinted by their first and last MiB and their size.
_WHOLE = 64 << 20


def _sha(path: str) -> str:
    digest = hashlib.sha256()
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        if size <= _WHOLE:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        else:
            digest.update(f.read(1 << 20))
            f.seek(-(1 << 20), 2)
            digest.update(f.read(1 << 20) + str(size).encode())
    return digest.hexdigest()


def _files(path: str) -> Iterable[str]:
    if os.path.isfile(path):
        yield path
        return
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d != ".ipynb_checkpoints")
        for name in sorted(files):
            full = os.path.join(root, name)
            if os.path.isfile(full) and not os.path.islink(full):
                yield full


def handout_hashes(folder: Optional[str]) -> Set[str]:
    """Hashes of the files the instructor handed out (the template's folder): never duplicates."""
    if not folder or not os.path.isdir(folder):
        return set()
    return {_sha(p) for p in _files(folder) if os.path.getsize(p) > 0}


def file_fingerprints(source: str, handout: Iterable[str] = ()) -> Dict[str, str]:
    """sha256 -> "<kind> <path in the submission>" for every non-empty handed-in file."""
    skip = set(handout)
    found: Dict[str, str] = {}
    base = source if os.path.isdir(source) else os.path.dirname(source)
    for path in _files(source):
        try:
            if os.path.getsize(path) == 0:
                continue
            sha = _sha(path)
        except OSError:
            continue
        if sha in skip:
            continue
        rel, name = os.path.relpath(path, base), os.path.basename(path)
        if name in ("results.csv", "sweep.json"):
            kind = "sweep"
        elif name.endswith((".log", ".out", ".err")) or "logs" in rel.split(os.sep)[:-1]:
            kind = "log"
        else:
            kind = "notebook" if name.endswith(".ipynb") else "file"
        found.setdefault(sha, "{} {}".format(kind, rel))
    return found


def record_fingerprints(records: Mapping[str, Any]) -> Dict[str, str]:
    """sha256 -> "record <name>" for submitted records that hold measured timings."""
    found: Dict[str, str] = {}
    for name, data in records.items():
        if not isinstance(data, dict) or not (data.get("series") or _has_timing(data)):
            continue
        if (data.get("params") or {}).get("log"):  # read from a log: the log file is the evidence
            continue
        text = json.dumps(data, sort_keys=True, default=str)
        found.setdefault(hashlib.sha256(text.encode()).hexdigest(), "record {}".format(name))
    return found


def _has_timing(data: Mapping[str, Any]) -> bool:
    units = data.get("units") or {}
    return any(str(u).strip() in ("s", "ms", "samples/s", "seq/s", "images/s", "tokens/s") or "/s" in str(u)
               for u in units.values())


def _owners(results: Iterable[Mapping[str, Any]]) -> Dict[str, Dict[str, str]]:
    """fingerprint -> {student: what it is} over every result's file and record fingerprints."""
    owners: Dict[str, Dict[str, str]] = {}
    for result in results:
        for key in ("fingerprints", "record_fingerprints"):
            for sha, what in (result.get(key) or {}).items():
                owners.setdefault(sha, {}).setdefault(result["student"], what)
    return owners


def find_duplicates(results: Iterable[Mapping[str, Any]]) -> Dict[str, List[Tuple[str, List[str]]]]:
    """student -> sorted [(what, [other students])] for every fingerprint shared with another student."""
    owners = _owners(results)
    flags: Dict[str, List[Tuple[str, List[str]]]] = {}
    for by_student in owners.values():
        if len(by_student) < 2:
            continue
        for student, what in by_student.items():
            flags.setdefault(student, []).append((what, sorted(s for s in by_student if s != student)))
    return {student: sorted(items) for student, items in flags.items()}


def gradebook_note(items: Sequence[Tuple[str, List[str]]]) -> str:
    """One short cell: "ben: 11 logs; kim: 1 notebook" (per other student, what was shared)."""
    by_other: Dict[str, Counter] = {}
    for what, others in items:
        for other in others:
            by_other.setdefault(other, Counter())[what.split(" ", 1)[0]] += 1
    return "; ".join("{}: {}".format(other, ", ".join("{} {}{}".format(n, kind, "s" if n > 1 else "")
                                                      for kind, n in sorted(kinds.items())))
                     for other, kinds in sorted(by_other.items()))


def groups(results: Iterable[Mapping[str, Any]]) -> List[Tuple[str, List[str]]]:
    """[(what, [students])] for each piece of evidence more than one student handed in."""
    owners = _owners(results)
    found = [(sorted(set(by.values()))[0], sorted(by)) for by in owners.values() if len(by) > 1]
    return sorted(found, key=lambda g: (-len(g[1]), g[0]))
