"""Typed notebook parameters: declared once, checked before anything runs.

papermill injects whatever it is given (it never checks types, and only warns about unknown
names), so every exercise declares a :class:`Spec` and its notebook's second cell calls
``spec.from_notebook(globals())``. A bad value stops the notebook with a
:class:`ParameterError` that names the parameter, the value given and what is allowed.

    >>> spec = Spec("demo", Param("epochs", int, 10, min=1))
    >>> spec.validate({"epochs": 3}).epochs
    3
"""

from __future__ import annotations

import ast
import difflib
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from labkit.errors import LabkitError, stops_end_run_all
from labkit.files import NotAFile, regular_file

__all__ = ["Param", "Spec", "Config", "ParameterError", "StaleConfigError", "check_current", "PATH", "INT_OR_AUTO",
           "injected_names", "existing_file", "usable_directory", "folder_path"]

#: Declared types: a filesystem path given as text; a whole number or "auto" (the modelzoo's micro_batch_size).
PATH, INT_OR_AUTO = "path", "int or 'auto'"
_TYPE_NAMES = {int: "int", float: "float", str: "str", bool: "bool", list: "list", PATH: PATH, INT_OR_AUTO: INT_OR_AUTO}
#: The Python types a value of each plain declared type may have (an int where a float is declared).
_ACCEPTED = {bool: bool, int: int, float: (int, float), str: str}


class ParameterError(LabkitError, ValueError):
    """One or more notebook parameters are wrong; ``problems`` lists each, naming the parameter,
    the value given and what is allowed (Jupyter shows the message alone, no traceback)."""

    shown_as = "ParameterError"

    def __init__(self, problems: Sequence[str], spec_name: str = ""):
        self.problems = list(problems)
        self.spec_name = spec_name
        head = "Bad parameter" + ("s" if len(self.problems) > 1 else "")
        if spec_name:
            head += " for " + spec_name
        super().__init__(head + ":\n" + "\n".join("  - " + p for p in self.problems))


class StaleConfigError(ParameterError):
    """The notebook's parameters changed since its config was built (a cell edited and run alone),
    shown as one sentence ending in "run the config cell again (or Run All)"."""

    shown_as = ""

    def __init__(self, differences: Sequence[str], spec_name: str = ""):
        ValueError.__init__(self, ", and ".join(differences) + ": run the config cell again (or Run All)")
        self.problems = list(differences)
        self.spec_name = spec_name


@dataclass(frozen=True)
class Param:
    """One declared parameter: its type, default and allowed range.

    ``type`` is ``int``, ``float``, ``str``, ``bool``, ``list``, :data:`PATH` or :data:`INT_OR_AUTO`. An ``int``
    is accepted where a ``float`` is declared (and converted); a ``bool`` is never accepted
    as a number. ``optional`` allows ``None``. ``check`` is a function returning a
    problem text, or ``None`` when the value is fine.
    """

    name: str
    type: Any
    default: Any
    help: str = ""
    optional: bool = False
    min: Optional[float] = None
    max: Optional[float] = None
    min_exclusive: bool = False
    choices: Optional[Tuple[Any, ...]] = None
    item_type: Any = None
    check: Optional[Callable[[Any], Optional[str]]] = field(default=None, compare=False)

    @property
    def type_name(self) -> str:
        name = _TYPE_NAMES.get(self.type, getattr(self.type, "__name__", str(self.type)))
        if self.type is list and self.item_type is not None:
            name = "list of " + _TYPE_NAMES.get(self.item_type, str(self.item_type))
        return name + (" or None" if self.optional else "")

    def allowed(self) -> str:
        """What values are allowed, in words."""
        if self.choices is not None:
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        elif hasattr(self.check, "allows"):
            text = ("a list of paths, each " if self.type is list else "a path ") + getattr(self.check, "allows")
        else:
            text = "an " if self.type_name[0] in "aeiou" else "a "
            text += self.type_name.replace(" or None", "")
            bounds = []
            if self.min is not None:
                bounds.append(("> " if self.min_exclusive else ">= ") + _num(self.min))
            if self.max is not None:
                bounds.append("<= " + _num(self.max))
            if bounds:
                text += " " + " and ".join(bounds)
            if self.type is float:
                text += " (finite)"
        if self.optional:
            text += ", or None"
        return text

    def convert(self, value: Any) -> Any:
        """Return ``value`` in the declared type, or raise ``ValueError`` saying why not."""
        if value is None:
            if self.optional:
                return None
            raise ValueError("None is not allowed")
        value = self._convert_type(value)
        if self.choices is not None and value not in self.choices:
            hint = _did_you_mean(str(value), [str(c) for c in self.choices])
            raise ValueError("not one of the choices" + hint)
        if self.type in (int, float) or (self.type == INT_OR_AUTO and value != "auto"):
            if self.type is float and not math.isfinite(value):
                raise ValueError("not a finite number")
            if self.min is not None and (value < self.min or (self.min_exclusive and value == self.min)):
                raise ValueError("too small")
            if self.max is not None and value > self.max:
                raise ValueError("too large")
        if self.check is not None:
            problem = self.check(value)
            if problem:
                raise ValueError(problem)
        return value

    def _convert_type(self, value: Any) -> Any:
        kind = self.type
        if kind in _ACCEPTED:  # a bool is never accepted as a number
            if isinstance(value, _ACCEPTED[kind]) and (kind is bool or not isinstance(value, bool)):
                return kind(value)
        elif kind == INT_OR_AUTO and (value == "auto" or (isinstance(value, int) and not isinstance(value, bool))):
            return value
        elif kind == PATH:
            if isinstance(value, (str, os.PathLike)):
                return os.path.expanduser(os.fspath(value))
        elif kind is list:
            if isinstance(value, str):
                value = [value]  # a single sentence where a list is expected
            if isinstance(value, (list, tuple)):
                items = list(value)
                if self.item_type is not None:
                    item = Param(self.name + "[i]", self.item_type, None)
                    items = [item._convert_type(v) for v in items]
                return items
        raise ValueError("wrong type: got " + type(value).__name__)

    def from_text(self, text: str) -> Any:
        """Convert command-line text (``-p epochs 10``) to the declared type."""
        if self.optional and text.strip() in ("None", "none", "null", ""):
            return self.convert(None)
        kind = self.type
        try:
            if kind is bool:
                lowered = text.strip().lower()
                if lowered not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                return self.convert(lowered in ("true", "1", "yes"))
            if kind is int or (kind == INT_OR_AUTO and text.strip() != "auto"):
                return self.convert(int(text.strip()))
            if kind is float:
                return self.convert(float(text.strip()))
            if kind is list:
                import yaml  # a list is given as YAML/JSON text: '["a", "b"]'

                return self.convert(yaml.safe_load(text))
        except (TypeError, ValueError) as exc:
            if str(exc) and not str(exc).startswith(("invalid literal", "could not convert")):
                raise
            raise ValueError("cannot read {!r} as {}".format(text, self.type_name)) from None
        return self.convert(text)


def _num(x: float) -> str:
    return repr(int(x)) if float(x).is_integer() else repr(x)


def _did_you_mean(word: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return " (did you mean {!r}?)".format(close[0]) if close else ""


_IMMUTABLE = (int, float, str, bool, type(None))


class Config(Mapping[str, Any]):
    """The checked parameters of one run, read-only, readable as ``config.epochs``; every read first
    runs :func:`check_current`, so a parameters cell edited and run alone never leaves a run using
    values the notebook no longer shows."""

    def __init__(self, values: Mapping[str, Any], spec_name: str = ""):
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "spec_name", spec_name)
        object.__setattr__(self, "_notebook", None)  # (spec, namespace, {name: object as built})

    def _link(self, spec: "Spec", namespace: Mapping[str, Any]) -> "Config":
        seen = {p.name: namespace[p.name] for p in spec if p.name in namespace}
        object.__setattr__(self, "_notebook", (spec, namespace, seen))
        return self

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name not in values:
            raise AttributeError("no parameter named {!r}".format(name))
        check_current(self)
        return values[name]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Config is read-only; pass new values as notebook parameters")

    def __getitem__(self, name: str) -> Any:
        value = self._values[name]
        check_current(self)
        return value

    def __reduce__(self):  # copies and pickles (sweeps, workers) leave the notebook behind
        return (Config, (self._values, self.spec_name))

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        inner = ", ".join("{}={!r}".format(k, v) for k, v in self._values.items())
        return "Config({})".format(inner)

    def replace(self, **changes: Any) -> "Config":
        values = dict(self._values)
        values.update(changes)
        return Config(values, self.spec_name)

    def to_dict(self) -> Dict[str, Any]:
        check_current(self)
        return dict(self._values)


def check_current(config: Config) -> None:
    """Raise :class:`StaleConfigError` when the notebook no longer shows what ``config`` (built by
    :meth:`Spec.from_notebook`) holds: a changed value, a deleted name, or one that would not validate.

    Papermill, ``labkit run``/``sweep``/``grade`` and Run All execute the cells in order, so for them it
    always passes, as does a re-bound but equal value; an unchanged name costs one dictionary look-up.
    """
    linked = object.__getattribute__(config, "_notebook")
    if linked is None:
        return
    spec, namespace, seen = linked
    values = object.__getattribute__(config, "_values")
    differences = []
    for p in spec:
        present = p.name in namespace
        if present and p.name in seen:
            now = namespace[p.name]
            if now is seen[p.name] and isinstance(now, _IMMUTABLE):
                continue
        elif not present and p.name not in seen:
            continue
        held = values.get(p.name)
        if not present:
            differences.append("{} was deleted from the notebook but is {!r} in config".format(p.name, held))
            continue
        now = namespace[p.name]
        try:
            converted = p.convert(now)
        except ValueError as exc:
            differences.append("{} is {!r} in the notebook, which is not allowed ({}; allowed: {}), but {!r} in "
                               "config".format(p.name, now, exc, p.allowed(), held))
            continue
        if converted != held or type(converted) is not type(held):
            differences.append("{} is {!r} in the notebook but {!r} in config".format(p.name, now, held))
        else:
            seen[p.name] = now  # the same value bound again: remember it for the fast path
    if differences:
        raise StaleConfigError(differences, spec.name)


#: A check over several parameters: returns (parameter name, problem) or None.
CrossCheck = Callable[[Config], Optional[Tuple[str, str]]]


class Spec:
    """The declared parameters of one exercise."""

    def __init__(self, name: str, *params: Param, checks: Sequence[CrossCheck] = ()):
        self.name = name
        self.params = {p.name: p for p in params}
        self.checks = list(checks)

    def __iter__(self) -> Iterator[Param]:
        return iter(self.params.values())

    def __getitem__(self, name: str) -> Param:
        return self.params[name]

    def __contains__(self, name: object) -> bool:
        return name in self.params

    def defaults(self) -> Dict[str, Any]:
        return {p.name: p.default for p in self}

    def describe(self) -> str:
        """A table of the parameters, their types and defaults, for error messages and --help."""
        rows = [("name", "type", "default", "allowed")]
        rows += [(p.name, p.type_name, repr(p.default), p.allowed()) for p in self]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        line = "{:<{}}  {:<{}}  {:<{}}  {}"
        return "\n".join(line.format(r[0], widths[0], r[1], widths[1], r[2], widths[2], r[3]) for r in rows)

    def unknown_problems(self, names: Iterable[str]) -> List[str]:
        return ["{!r} is not a parameter of this notebook{}; its parameters are: {}".format(
                    name, _did_you_mean(name, self.params), ", ".join(self.params))
                for name in names if name not in self.params]

    def validate(self, values: Mapping[str, Any], unknown: Iterable[str] = ()) -> Config:
        """Check ``values`` (missing names take their defaults) and return a :class:`Config`; a
        :class:`ParameterError` lists every problem at once."""
        problems = self.unknown_problems(list(unknown) + [n for n in values if n not in self.params])
        checked: Dict[str, Any] = {}
        for p in self:
            value = values.get(p.name, p.default)
            try:
                checked[p.name] = p.convert(value)
            except ValueError as exc:
                problems.append("{} = {!r}: {}; allowed: {}".format(p.name, value, exc, p.allowed()))
        if not problems:
            config = Config(checked, self.name)
            for check in self.checks:
                found = check(config)
                if found:
                    name, problem = found
                    problems.append("{} = {!r}: {}".format(name, checked.get(name), problem))
            if not problems:
                return config
        raise ParameterError(problems, self.name)

    def from_text(self, pairs: Mapping[str, str]) -> Dict[str, Any]:
        """Convert ``-p NAME TEXT`` pairs to typed values; raise ParameterError on any problem."""
        problems = self.unknown_problems(pairs)
        values: Dict[str, Any] = {}
        for name, text in pairs.items():
            if name not in self.params:
                continue
            try:
                values[name] = self.params[name].from_text(text)
            except ValueError as exc:
                problems.append("{} = {!r}: {}; allowed: {}".format(name, text, exc, self.params[name].allowed()))
        if problems:
            raise ParameterError(problems, self.name)
        return values

    def from_notebook(self, namespace: Mapping[str, Any]) -> Config:
        """Validate the parameters as a notebook's globals hold them; the config keeps ``namespace``
        (:func:`check_current`). Undeclared names papermill injected are reported too, read from the
        injected cell in the input history, so a student's own variables are never taken for parameters.
        In a kernel, from here on a cell that labkit stops ends a Run All there (:func:`stops_end_run_all`).
        """
        stops_end_run_all()
        values = {p.name: namespace.get(p.name, p.default) for p in self}
        history = namespace.get("In") or []
        return self.validate(values, unknown=injected_names(history))._link(self, namespace)


def injected_names(history: Sequence[str]) -> List[str]:
    """Names assigned by the last papermill-injected cell in an IPython input history."""
    for source in reversed(list(history)):
        if isinstance(source, str) and source.lstrip().startswith("# Parameters"):
            try:
                tree = ast.parse(source)
            except SyntaxError:
                return []
            names = []
            for node in tree.body:
                if isinstance(node, ast.Assign):
                    names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
            return names
    return []


def existing_file(value: Any) -> Optional[str]:
    """A ``Param.check`` for a path, or a list of paths, that must name a readable regular file (a log, a
    config). Every exercise's path parameters use it, so a bad path reads the same everywhere. A folder,
    FIFO, device or socket is refused without being opened: a read from a FIFO waits for a writer for ever."""
    if isinstance(value, (list, tuple)):
        return "; ".join("{!r}: {}".format(v, existing_file(v)) for v in value if existing_file(v)) or None
    if not os.path.exists(value):
        relative = "" if os.path.isabs(value) else " (relative paths start from {})".format(os.getcwd())
        return "no such file" + relative
    kind = _what_it_is(value)
    if kind != _A_FILE:
        return "is {}, not a regular file".format(kind)
    if not os.access(value, os.R_OK):
        return "cannot be read (permission denied)"
    return None


def usable_directory(value: str) -> Optional[str]:
    """A ``Param.check`` for a directory that exists or can be created (a data cache)."""
    if os.path.isdir(value):
        return None
    if os.path.lexists(value):
        return "is {}, not a directory".format(_what_it_is(value))
    parent = os.path.dirname(os.path.abspath(value))
    if not os.path.isdir(parent):
        return "does not exist, and neither does its parent directory {}".format(parent)
    return None


def folder_path(value: str) -> Optional[str]:
    """A ``Param.check`` for a folder that is read when it is there (a missing one holds nothing yet)."""
    if os.path.lexists(value) and not os.path.isdir(value):
        return "is {}, not a folder".format(_what_it_is(value))
    return None


_A_FILE = "a file"


def _what_it_is(path: str) -> str:
    """What ``path`` is, in words ("a file", "a folder", "a FIFO (named pipe)", "a link to a missing path"),
    found without opening it."""
    try:
        regular_file(path, "")
    except NotAFile as refused:
        return refused.kind
    except FileNotFoundError:
        return "a link to a missing path"
    return _A_FILE


# what each allows, in words, for Param.allowed (and so for every error message)
existing_file.allows = "naming a readable file"  # type: ignore[attr-defined]
usable_directory.allows = "naming a directory that exists or can be created"  # type: ignore[attr-defined]
folder_path.allows = "naming a folder, or nothing yet"  # type: ignore[attr-defined]
