"""labkit's errors (labkit/errors.py): one base for all, documented, and shown in a notebook as
one line when their message says all a student needs.

    .venv/bin/python -m pytest tests/test_errors.py -x -q
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Dict, List, Type

import nbformat
import pytest
from nbclient import NotebookClient

import labkit
from labkit import errors
from labkit.errors import LabkitError
from labkit.interrupts import Interrupted
from labkit.params import ParameterError, StaleConfigError


def _labkit_exceptions() -> Dict[str, Type[BaseException]]:
    """Every exception class labkit's modules define, by ``module.QualName``."""
    found: Dict[str, Type[BaseException]] = {}
    for info in pkgutil.walk_packages(labkit.__path__, "labkit."):
        if info.name.endswith("__main__"):  # runs the command line when imported
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == info.name:
                found["{}.{}".format(obj.__module__, obj.__qualname__)] = obj
    return found


EXCEPTIONS = _labkit_exceptions()


def test_the_walk_finds_the_errors_it_should():  # guards the walk itself: an empty walk would pass all below
    assert {ParameterError, StaleConfigError, Interrupted, LabkitError} <= set(EXCEPTIONS.values())
    assert len(EXCEPTIONS) >= 30


@pytest.mark.parametrize("name", sorted(EXCEPTIONS))
def test_every_labkit_exception_derives_from_labkit_error(name):
    error = EXCEPTIONS[name]
    if issubclass(error, KeyboardInterrupt):  # a stop, not an error (Interrupted; the phases' end of a run):
        assert not issubclass(error, Exception)  # `except Exception` must not catch it
        assert error.__module__.startswith("labkit.interrupts.")  # the interrupts package
    else:
        assert issubclass(error, LabkitError), "{} does not derive from labkit.errors.LabkitError".format(name)


def test_the_hierarchy_documents_every_error():
    doc = errors.__doc__ or ""
    missing = sorted({e.__name__ for e in EXCEPTIONS.values() if not e.__name__.startswith("_")
                      and "``{}``".format(e.__name__) not in doc and ":class:`labkit.interrupts.{}`".format(
                          e.__name__) not in doc})
    assert not missing, "labkit/errors.py's docstring does not list: {}".format(missing)


def test_errors_keep_their_built_in_base():
    """``except ValueError`` (or MemoryError...) around labkit code still catches what it did."""
    assert issubclass(ParameterError, ValueError) and issubclass(StaleConfigError, ValueError)
    assert all(issubclass(e, Exception) for e in EXCEPTIONS.values() if not issubclass(e, KeyboardInterrupt))
    bases = {e.__name__: [b for b in e.__mro__ if b.__module__ == "builtins"][0] for e in EXCEPTIONS.values()}
    assert bases["NoRunError"] is LookupError and bases["ModelTooLarge"] is MemoryError
    assert bases["LandlockError"] is OSError and bases["DeviceError"] is RuntimeError


#: The errors a notebook shows as one line (their message says what was wrong and what to do).
ONE_LINE = ["AcceleratorError", "AccessError", "BackendError", "Busy", "DeviceError", "EvidenceError", "Interrupted", "JobRequestError",
            "MnistDataError", "ModelUnavailable", "NotAFile", "NotServed", "NothingFits", "NothingFitsHere", "ParameterError", "PromptError", "StaleConfigError",
            "TooBigForMemory", "UpstreamChanged"]


def _one_line_errors() -> List[Type[BaseException]]:
    return [e for e in EXCEPTIONS.values() if getattr(e, "shown_as", None) is not None]


def test_which_errors_are_shown_as_one_line():
    assert sorted(e.__name__ for e in _one_line_errors()) == ONE_LINE


def _raise(error: Type[BaseException]) -> str:
    """A cell raising ``error`` with the message ``the message`` (whatever its constructor takes)."""
    # MemoryError's own __new__ refuses a subclass whose first base is LabkitError (NothingFits)
    return ("import {m}\ntry:\n    error = {m}.{q}.__new__({m}.{q})\n"
            "except TypeError:\n    error = Exception.__new__({m}.{q})\n"
            "BaseException.__init__(error, 'the message')\n"
            "raise error".format(m=error.__module__, q=error.__qualname__))


@pytest.mark.slow
def test_a_notebook_shows_one_line_for_these_errors_and_a_traceback_for_the_others():
    """In a real IPython kernel, through nbclient (what papermill runs): the error output saved
    in the notebook is the line a student sees in Jupyter, and what papermill prints."""
    one_line = _one_line_errors()
    cells = [_raise(e) for e in one_line] + [
        # a parameter check as a notebook runs it: every problem in the one line
        "from labkit.params import Param, Spec\nSpec('demo', Param('epochs', int, 1, min=1)).validate({'epochs': 0})",
        # an error of labkit's own kind keeps its parent's line
        "from labkit.params import ParameterError\nclass TooBig(ParameterError, MemoryError):\n    pass\n"
        "raise TooBig(['model_size is too large here'])",
        # no shown_as: Python's traceback, through the cell that raised it
        "from labkit.errors import LabkitError\ndef inner():\n    raise LabkitError('deep down')\ninner()",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    NotebookClient(nb, kernel_name="python3", timeout=120, allow_errors=True).execute()
    shown = [[o for o in cell.outputs if o.output_type == "error"] for cell in nb.cells]
    assert all(len(errors) == 1 for errors in shown), shown
    *short, check, derived, deep = [errors[0] for errors in shown]
    for error, output in zip(one_line, short):
        expected = "{}: the message".format(error.shown_as) if error.shown_as else "the message"
        assert (output.ename, list(output.traceback)) == (error.__name__, [expected])
    assert (check.ename, list(check.traceback)) == ("ParameterError", ["ParameterError: " + check.evalue])
    assert check.evalue.startswith("Bad parameter for demo:\n  - epochs = 0")
    assert (derived.ename, list(derived.traceback)) == ("TooBig", ["ParameterError: Bad parameter:\n"
                                                                   "  - model_size is too large here"])
    assert deep.ename == "LabkitError" and len(deep.traceback) > 2
    assert "Traceback (most recent call last)" in "\n".join(deep.traceback) and "inner()" in "\n".join(deep.traceback)


def test_only_errors_that_say_all_define_the_ipython_hook():
    """IPython calls ``_render_traceback_`` when it exists, so it must not exist without ``shown_as``."""
    assert not hasattr(LabkitError("x"), "_render_traceback_")
    assert ParameterError(["a", "b"])._render_traceback_() == ["ParameterError: Bad parameters:\n  - a\n  - b"]
    assert Interrupted("interrupted: stopped")._render_traceback_() == ["interrupted: stopped"]
