"""labkit.params: declared types, ranges, unknown names, and messages that say what is allowed."""

import math
import os

import pytest

from labkit.params import PATH, Config, Param, ParameterError, Spec, existing_file, injected_names, usable_directory

SPEC = Spec(
    "demo",
    Param("lr", float, 0.1, min=0, min_exclusive=True),
    Param("epochs", int, 3, min=1, max=100),
    Param("device", str, "auto", choices=("auto", "cpu")),
    Param("limit", int, None, optional=True, min=1),
    Param("flag", bool, False),
    Param("texts", list, None, optional=True, item_type=str),
    Param("out", PATH, None, optional=True, check=usable_directory),
    checks=[lambda c: ("limit", "must be at least epochs") if c.limit is not None and c.limit < c.epochs else None],
)


def test_defaults_and_int_accepted_for_float():
    config = SPEC.validate({"lr": 1})
    assert config.lr == 1.0 and isinstance(config.lr, float)
    assert config.epochs == 3 and config["device"] == "auto" and config.limit is None


@pytest.mark.parametrize("values,fragment", [
    ({"epochs": "ten"}, "epochs = 'ten': wrong type: got str; allowed: an int >= 1 and <= 100"),
    ({"epochs": 2.5}, "wrong type: got float"),
    ({"epochs": True}, "wrong type: got bool"),  # a bool is an int in Python, never here
    ({"epochs": 0}, "too small"),
    ({"epochs": 101}, "too large"),
    ({"lr": 0}, "lr = 0: too small; allowed: a float > 0 (finite)"),
    ({"lr": float("inf")}, "not a finite number"),
    ({"device": "cpuu"}, "did you mean 'cpu'?"),
    ({"limit": 2}, "limit = 2: must be at least epochs"),
    ({"flag": 1}, "flag = 1: wrong type"),
    ({"texts": [1, 2]}, "texts = [1, 2]: wrong type"),
    ({"epoch": 3}, "'epoch' is not a parameter of this notebook (did you mean 'epochs'?)"),
    ({"out": "/nonexistent-dir/sub"}, "does not exist, and neither does its parent"),
])
def test_bad_values_name_the_parameter_and_what_is_allowed(values, fragment):
    with pytest.raises(ParameterError) as err:
        SPEC.validate(values)
    assert fragment in str(err.value)
    assert str(err.value).startswith("Bad parameter for demo")


def test_all_problems_at_once_and_rendered_without_traceback():
    with pytest.raises(ParameterError) as err:
        SPEC.validate({"epochs": 0, "lr": -1, "device": "gpu"})
    assert len(err.value.problems) == 3
    [rendered] = err.value._render_traceback_()
    assert rendered.startswith("ParameterError: Bad parameters for demo:") and "Traceback" not in rendered


def test_none_only_when_optional():
    with pytest.raises(ParameterError, match="None is not allowed"):
        SPEC.validate({"epochs": None})
    assert SPEC.validate({"limit": None}).limit is None


def test_a_single_string_is_a_list_of_one():
    assert SPEC.validate({"texts": "hello"}).texts == ["hello"]


def test_from_text_converts_command_line_values():
    assert SPEC.from_text({"lr": "1", "epochs": "7", "flag": "true", "limit": "None", "texts": '["a", "b"]'}) == {
        "lr": 1.0, "epochs": 7, "flag": True, "limit": None, "texts": ["a", "b"]}
    with pytest.raises(ParameterError) as err:
        SPEC.from_text({"epochs": "ten", "nope": "1"})
    message = str(err.value)
    assert "cannot read 'ten' as int" in message and "'nope' is not a parameter" in message


def test_config_is_read_only():
    config = SPEC.validate({})
    with pytest.raises(AttributeError, match="read-only"):
        config.epochs = 5
    assert config.replace(epochs=5).epochs == 5 and config.epochs == 3
    assert isinstance(config, Config) and dict(config) == config.to_dict()


def test_injected_names_come_from_the_papermill_cell_only():
    history = ["", "epochs = 3\nlr = 0.1", "# Parameters\nepoch = 5\nlr = 0.2\n", "x = 1"]
    assert injected_names(history) == ["epoch", "lr"]
    assert injected_names(["a = 1", "b = 2"]) == []  # JupyterLab: the student's own variables are not parameters
    namespace = {"In": history, "epochs": 3, "lr": 0.2, "epoch": 5, "student_variable": 1}
    with pytest.raises(ParameterError, match="'epoch' is not a parameter"):
        SPEC.from_notebook(namespace)
    namespace["In"] = ["# Parameters\nlr = 0.2\n"]
    assert SPEC.from_notebook(namespace).lr == 0.2


def test_path_checks(tmp_path):
    file = tmp_path / "f.txt"
    file.write_text("x")
    assert existing_file(str(file)) is None
    assert existing_file(str(tmp_path / "missing")) == "no such file"
    assert existing_file(str(tmp_path)) == "is a folder, not a regular file"
    assert usable_directory(str(file)) == "is a file, not a directory"
    assert usable_directory(str(tmp_path / "new")) is None


def test_describe_lists_every_parameter():
    text = SPEC.describe()
    for p in SPEC:
        assert p.name in text
    assert "int or None" in text and math.isfinite(0.1)


def test_every_exercises_path_parameters_fail_the_same_way(tmp_path, monkeypatch):
    """A missing log reads the same in every exercise: the parameter, the value, what is allowed."""
    from labkit.testbeds import comparison, graphcore, groq
    from labkit.testbeds.cerebras import bert_large as cerebras
    from labkit.testbeds.sambanova import bert_large as sambanova

    monkeypatch.chdir(tmp_path)
    for spec, name in ((graphcore.SPEC, "log_path"), (cerebras.SPEC, "log_path"),
                       (cerebras.SPEC, "params_template"), (sambanova.SPEC, "log_path"),
                       (groq.SPEC, "log_path"), (comparison.SPEC, "reference_csv")):
        with pytest.raises(ParameterError) as caught:
            spec.validate({name: "missing.log"})
        assert "{} = 'missing.log': no such file (relative paths start from {}); allowed: a path naming a " \
               "readable file, or None".format(name, tmp_path) in str(caught.value), spec.name
    for spec in (cerebras.SPEC, sambanova.SPEC):
        with pytest.raises(ParameterError) as caught:
            spec.validate({"compare_logs": [str(tmp_path), "~/no-such.log"]})
        assert "compare_logs = [{!r}, '~/no-such.log']: {!r}: is a folder, not a regular file; {!r}: no such file; " \
               "allowed: a list of paths, each naming a readable file".format(
                   str(tmp_path), str(tmp_path), os.path.expanduser("~/no-such.log")) in str(caught.value), spec.name
