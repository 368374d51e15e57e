"""labkit.execute.upstream: the private methods labkit overrides are checked at import, and a release
that changed one is named in one sentence."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import version

import pytest
from nbclient import NotebookClient

from labkit.execute import upstream


def test_the_installed_releases_have_every_private_method_as_labkit_expects():
    upstream.check()  # also run at import; here its failure would name the method


class _Renamed(NotebookClient):
    """nbclient as a release that re-signed the poll would be."""

    async def _async_poll_for_reply(self, msg_id, cell, timeout):  # type: ignore[override]
        return {}


class _Synchronous(NotebookClient):
    def _check_raise_for_error(self, cell, cell_index, exec_reply):  # type: ignore[override]
        return None


@pytest.mark.parametrize("cls, name, says", [
    (_Renamed, "_async_poll_for_reply", r"is now \(self, msg_id, cell, timeout\);"),
    (_Synchronous, "_check_raise_for_error", r"is now gone;"),
])
def test_a_changed_private_method_is_one_sentence_naming_the_package_and_its_version(cls, name, says):
    expected = next(entry for entry in upstream.PRIVATE if entry[2] == name)
    with pytest.raises(upstream.UpstreamChanged) as raised:
        upstream.check([("nbclient", cls, name, expected[3])])
    message = str(raised.value)
    installed = version("nbclient")
    assert message.startswith("nbclient {} changed a method labkit run overrides: {}.{}(".format(
        installed, cls.__name__, name))
    assert "pip install 'nbclient<{}'".format(installed) in message
    assert len(message.splitlines()) == 1
    assert re.search(says, message)


def test_labkit_run_says_the_sentence_and_exits_2_when_a_release_changed_a_private_method(tmp_path):
    """A real process whose nbclient lost a method labkit overrides: `labkit run` prints one line."""
    script = ("import sys\nfrom nbclient import NotebookClient\ndel NotebookClient._check_raise_for_error\n"
              "from labkit.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    done = subprocess.run([sys.executable, "-c", script, "run", str(notebook), str(tmp_path / "out.ipynb")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "labkit run: nbclient {0} changed a method labkit run overrides: NotebookClient._check_raise_for_error("
        "self, cell, cell_index, exec_reply) is now gone; install an earlier nbclient "
        "(pip install 'nbclient<{0}')".format(version("nbclient"))]
    assert not (tmp_path / "out.ipynb").exists()
