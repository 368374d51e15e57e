"""The cerebras package after the split: every module's __all__ is real, the notebook's names stay."""

import importlib
import pkgutil
from pathlib import Path

import pytest

import labkit.testbeds.cerebras as cerebras

MODULES = sorted(info.name for info in pkgutil.iter_modules(cerebras.__path__))


@pytest.mark.parametrize("name", MODULES)
def test_each_module_names_only_what_it_has_and_stays_small(name):
    module = importlib.import_module("labkit.testbeds.cerebras." + name)
    missing = [public for public in getattr(module, "__all__", []) if not hasattr(module, public)]
    assert not missing, "labkit.testbeds.cerebras.{} lists {} in __all__ but lacks them".format(name, missing)
    lines = len(Path(module.__file__).read_text().splitlines())
    assert lines <= 450, "{} has {} lines; split it by concern (limit 450)".format(module.__file__, lines)


def test_the_package_keeps_the_names_notebooks_and_the_homework_use():
    # The names the notebook, the homework and the spec string "labkit.testbeds.cerebras:BERT_SPEC" use.
    used = {"BERT_SPEC", "plan", "run_bert", "compare", "comparison_table", "plot_comparison", "metrics_table",
            "plot_loss", "show", "read_log", "run_portable", "modelzoo_command", "write_params_yaml",
            "stream_command", "standardize", "cerebras_stack", "CEREBRAS_HELP", "DEFAULT_TEMPLATE", "EXERCISE"}
    assert used <= set(cerebras.__all__)
    for public in cerebras.__all__:
        assert getattr(cerebras, public) is not None
    # Each public name is defined once, in the module of its concern, and re-exported unchanged.
    from labkit.testbeds.cerebras import exercise, host, report, spec

    assert cerebras.run_bert is exercise.run_bert and cerebras.plan is host.plan
    assert cerebras.show is report.show and cerebras.BERT_SPEC is spec.BERT_SPEC
