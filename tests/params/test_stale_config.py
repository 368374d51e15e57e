"""A config built from a notebook refuses to be read once the notebook shows other values."""

import copy
import pickle

import pytest

from labkit.params import PATH, Param, ParameterError, Spec, StaleConfigError, check_current

SPEC = Spec("demo", Param("learning_rate", float, 0.03, min=0, min_exclusive=True), Param("epochs", int, 10, min=1),
            Param("names", list, [], item_type=str), Param("data_dir", PATH, None, optional=True))
AGAIN = ": run the config cell again (or Run All)"


def notebook(**values):
    namespace = {"learning_rate": 0.03, "epochs": 2, "names": ["a"]}
    namespace.update(values)
    return namespace


def test_a_changed_value_is_refused_with_one_sentence():
    ns = notebook()
    config = SPEC.from_notebook(ns)
    assert config.learning_rate == 0.03
    ns["learning_rate"] = 0.5
    with pytest.raises(StaleConfigError) as caught:
        config.learning_rate
    assert str(caught.value) == "learning_rate is 0.5 in the notebook but 0.03 in config" + AGAIN
    assert caught.value._render_traceback_() == [str(caught.value)]  # what Jupyter shows: no traceback
    assert isinstance(caught.value, ParameterError)
    for read in (lambda: config["epochs"], config.to_dict, lambda: dict(config), lambda: check_current(config)):
        with pytest.raises(StaleConfigError):
            read()


def test_every_difference_is_named_deleted_invalid_and_added():
    ns = notebook()
    config = SPEC.from_notebook(ns)
    del ns["epochs"]
    ns["learning_rate"] = -1.0
    ns["data_dir"] = "/tmp"  # was not in the notebook when the config was built
    with pytest.raises(StaleConfigError) as caught:
        check_current(config)
    assert str(caught.value) == (
        "learning_rate is -1.0 in the notebook, which is not allowed (too small; allowed: a float > 0 (finite)), "
        "but 0.03 in config, and epochs was deleted from the notebook but is 2 in config, and data_dir is '/tmp' "
        "in the notebook but None in config" + AGAIN)


def test_equal_values_bound_again_and_mutated_lists():
    ns = notebook()
    config = SPEC.from_notebook(ns)
    ns["learning_rate"] = float("0.03")  # the cell run again: a new object, the same value
    ns["epochs"] = int("2")
    check_current(config)
    ns["names"].append("b")  # mutated in place: still a difference
    with pytest.raises(StaleConfigError, match=r"names is \['a', 'b'\] in the notebook but \['a'\] in config"):
        config.epochs


def test_configs_not_built_from_a_notebook_are_never_checked():
    ns = notebook()
    config = SPEC.from_notebook(ns)
    derived = config.replace(epochs=5)  # a run step's own variant (compare runs, sweeps)
    validated = SPEC.validate({"epochs": 3})
    copied, pickled = copy.deepcopy(config), pickle.loads(pickle.dumps(config))
    ns["epochs"] = 99
    assert (derived.epochs, validated.epochs, copied.epochs, pickled.epochs) == (5, 3, 2, 2)
    assert repr(config) == "Config(learning_rate=0.03, epochs=2, names=['a'], data_dir=None)"  # display never refuses
    assert not hasattr(config, "_repr_html_")  # IPython's probes are plain AttributeErrors
