"""Progress bars: text under papermill and in plain Python, widgets only where a person watches."""

import pytest

from labkit import progress


def test_plain_python_gets_text_bars(monkeypatch):
    monkeypatch.delenv("LABKIT_PROGRESS", raising=False)
    assert progress.style() == "text"


def test_the_environment_can_choose(monkeypatch):
    pytest.importorskip("ipywidgets")
    monkeypatch.setenv("LABKIT_PROGRESS", "off")
    assert progress.style() == "off"
    monkeypatch.setenv("LABKIT_PROGRESS", "widget")
    from tqdm.notebook import tqdm as notebook_tqdm

    bar = progress.bar(total=3, desc="x")
    try:
        assert isinstance(bar, notebook_tqdm)
    finally:
        bar.close()


def test_text_bar_keeps_numbers_outside_the_timing_bracket(monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_PROGRESS", "text")
    bar = progress.bar(total=2, desc="Epoch 1/1", unit="step")
    bar.set_postfix_str("loss 1.2345", refresh=False)
    bar.update(2)
    bar.close()
    final = capsys.readouterr().out.rsplit("\r", 1)[-1]
    assert final.startswith("Epoch 1/1: 100%") and "2/2 [" in final
    assert final.rstrip().endswith("], loss 1.2345")


def test_kernels_started_by_papermill_are_headless(monkeypatch):
    pytest.importorskip("ipywidgets")
    monkeypatch.delenv("LABKIT_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "_in_kernel", lambda: True)
    monkeypatch.setattr(progress, "_parent_command", lambda: "/usr/bin/python -m papermill in.ipynb out.ipynb")
    assert progress.style() == "text"
    monkeypatch.setattr(progress, "_parent_command", lambda: "/usr/bin/python /usr/bin/jupyter-lab")
    assert progress.style() == "widget"


def test_only_the_parent_program_counts_not_words_in_its_arguments(monkeypatch):
    # JupyterLab serving a folder under /tmp/pytest-of-me/, or from a checkout named labkit,
    # is still a person watching (the browser test found text bars in JupyterLab this way).
    pytest.importorskip("ipywidgets")
    monkeypatch.delenv("LABKIT_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "_in_kernel", lambda: True)
    for lab in ("/home/me/labkit/.venv/bin/python /home/me/labkit/.venv/bin/jupyter-lab",
                "/usr/bin/python3 /usr/bin/jupyter-lab --ServerApp.root_dir=/tmp/pytest-of-me/pytest-3/lab0"):
        monkeypatch.setattr(progress, "_parent_command", lambda: lab)
        assert progress.style() == "widget", lab
    for headless in ("/x/.venv/bin/python /x/.venv/bin/labkit run nb.ipynb out.ipynb",
                     "/usr/bin/python3 -Xfrozen_modules=off -m pytest tests", "/x/bin/papermill in.ipynb out.ipynb",
                     "jupyter nbconvert --execute nb.ipynb", "/x/python -m labkit.grading.sandbox.launcher --nproc 9 --"):
        monkeypatch.setattr(progress, "_parent_command", lambda: headless)
        assert progress.style() == "text", headless


def test_widget_bars_redraw_once_a_second(monkeypatch):
    pytest.importorskip("ipywidgets")
    monkeypatch.setenv("LABKIT_PROGRESS", "widget")
    bar = progress.bar(total=3, desc="x")
    try:
        assert bar.mininterval == 1.0
    finally:
        bar.close()
