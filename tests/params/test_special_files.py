"""Path parameters refuse a FIFO, a device, a socket and a folder where a file is read (and a file where a
folder is), in one sentence naming the parameter, the path and what it is, without opening it: a read
from a FIFO waits for a writer for ever.

    .venv/bin/python -m pytest tests/params/test_special_files.py -q
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

from labkit import exercises
from labkit.params import PATH, Param, ParameterError, Spec, existing_file, folder_path, usable_directory


@pytest.fixture
def specials(tmp_path: Path) -> Iterator[List[Tuple[str, str]]]:
    """(path, what it is) for a real FIFO, a real socket, two devices and a folder."""
    fifo = tmp_path / "run.log"
    os.mkfifo(str(fifo))
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(tmp_path / "s.sock"))
    folder = tmp_path / "logs"
    folder.mkdir()
    yield [(str(fifo), "a FIFO (named pipe)"), (str(tmp_path / "s.sock"), "a socket"),
           ("/dev/null", "a character device"), ("/dev/zero", "a character device"), (str(folder), "a folder")]
    listening.close()


def test_a_file_check_refuses_each_special_file_and_says_what_it_is(specials):
    for path, kind in specials:
        assert existing_file(path) == "is {}, not a regular file".format(kind)
    paths = [p for p, _ in specials]
    assert existing_file(paths).startswith("{!r}: is a FIFO (named pipe), not a regular file; ".format(paths[0]))


def test_folder_checks_refuse_what_is_not_a_folder(specials, tmp_path):
    regular = tmp_path / "notes.txt"
    regular.write_text("x")
    for path, kind in specials[:-1] + [(str(regular), "a file")]:
        assert usable_directory(path) == "is {}, not a directory".format(kind)
        assert folder_path(path) == "is {}, not a folder".format(kind)
    assert folder_path(specials[-1][0]) is None and folder_path(str(tmp_path / "not-yet")) is None
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    assert folder_path(str(tmp_path / "dangling")) == "is a link to a missing path, not a folder"


def _path_params() -> Iterator[Tuple[Spec, Param]]:
    """Every path parameter of every exercise in the registry (a list of paths counts)."""
    for entry in exercises.entries():
        if entry.module is not None:
            spec = entry.load().SPEC
            for param in spec:
                if PATH in (param.type, param.item_type):
                    yield spec, param


def test_every_exercises_path_parameters_refuse_a_fifo_in_one_sentence(tmp_path):
    fifo = str(tmp_path / "evidence.log")
    os.mkfifo(fifo)
    checked = []
    for spec, param in _path_params():
        value = [fifo] if param.type is list else fifo
        with pytest.raises(ParameterError) as caught:
            spec.from_notebook({param.name: value})
        [problem] = caught.value.problems
        assert problem.startswith("{} = {!r}: ".format(param.name, value)), problem
        assert "is a FIFO (named pipe), not a " in problem, problem
        checked.append("{}:{}".format(spec.name, param.name))
    assert {"graphcore/mnist:log_path", "graphcore/mnist:data_dir", "cerebras/bert_large:compare_logs",
            "cerebras/llama2_7b:modelzoo_dir", "sambanova/inference:log_path", "groq/bert_tiny:log_path",
            "comparison/ipu_vs_gpu:reference_csv", "homework/ai_testbeds:logs_dir",
            "homework/ai_testbeds_2025:runs_dir"} <= set(checked)


def test_the_homeworks_folders_may_be_missing_but_not_a_file(tmp_path):
    from labkit.testbeds.homework import fall2025

    (tmp_path / "logs.txt").write_text("pasted")
    assert fall2025.SPEC.validate({"logs_dir": str(tmp_path / "logs"), "runs_dir": str(tmp_path)}).runs_dir == \
        str(tmp_path)
    with pytest.raises(ParameterError, match=r"logs_dir = '.*logs.txt': is a file, not a folder; allowed: a path "
                                             r"naming a folder, or nothing yet"):
        fall2025.SPEC.validate({"logs_dir": str(tmp_path / "logs.txt")})


def test_the_inference_dataset_may_be_a_file_a_folder_or_a_hub_name_but_not_a_fifo(tmp_path):
    from labkit.testbeds.sambanova import inference

    (tmp_path / "prompts.json").write_text('{"prompt": ["hi"]}\n')
    for fine in ("builtin", "squad", str(tmp_path), str(tmp_path / "prompts.json")):
        assert inference.SPEC.validate({"dataset": fine}).dataset == fine
    os.mkfifo(str(tmp_path / "live.json"))
    with pytest.raises(ParameterError, match=r"dataset = '.*live.json': is a FIFO \(named pipe\), not a regular file"):
        inference.SPEC.validate({"dataset": str(tmp_path / "live.json")})
