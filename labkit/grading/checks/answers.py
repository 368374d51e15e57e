"""The check types that read the notebook itself: ``answer`` (written text under a heading,
not the template's) and ``no_error`` (every cell ran)."""

from __future__ import annotations

import re
from typing import Any, List, Optional

from labkit.grading.checks.evidence import Check, CheckResult, Evidence

__all__ = ["answer_text", "grade_answer", "grade_no_error"]


_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’.,%-]*")


def answer_text(nb: Any, heading: str) -> Optional[str]:
    """The markdown written under ``heading`` (until the next heading or code cell), or None."""
    wanted = heading.strip().lstrip("#").strip().lower()
    collecting = False
    parts: List[str] = []
    for cell in getattr(nb, "cells", []) or []:
        if cell.get("cell_type") != "markdown":
            if collecting:
                break
            continue
        for line in str(cell.get("source", "")).splitlines():
            match = _HEADING.match(line)
            if match and collecting:  # any heading ends the answer
                return "\n".join(parts).strip()
            if match and not collecting and match.group(2).strip().lower().startswith(wanted):
                collecting = True
                continue
            if collecting and not match:
                parts.append(line)
    return "\n".join(parts).strip() if collecting else None


def _words(text: str) -> List[str]:
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)  # template instructions in comments
    return _WORD.findall(text)


def grade_answer(check: Check, evidence: Evidence) -> CheckResult:
    heading = check.options["heading"]
    if evidence.submitted is None:
        return check.result(0, "the notebook could not be read")
    text = answer_text(evidence.submitted, heading)
    if text is None:
        return check.result(0, "no heading '{}' in the notebook (was it deleted or renamed?)".format(heading))
    words = _words(text)
    template = check.options.get("template_text")
    if template is None and evidence.template is not None:
        template = answer_text(evidence.template, heading)
    if template is not None:
        template_words = _words(template)
        if [w.lower() for w in words] == [w.lower() for w in template_words]:
            return check.result(0, "the answer under '{}' is still the template's text".format(heading))
        if template_words and " ".join(template_words).lower() in " ".join(words).lower():
            words = words[len(template_words):] if len(words) > len(template_words) else []
    needed = int(check.options.get("min_words", 20))
    if not words:
        return check.result(0, "the answer under '{}' is empty".format(heading))
    if len(words) >= needed:
        return check.result(1, "answered ({} words)".format(len(words)))
    partial = bool(check.options.get("partial", True))
    return check.result(len(words) / float(needed) if partial else 0,
                        "the answer has {} words; at least {} are expected".format(len(words), needed))


def grade_no_error(check: Check, evidence: Evidence) -> CheckResult:
    if evidence.status == "ok":
        return check.result(1, "every cell ran without an error")
    return check.result(0, evidence.reason or evidence.status)


