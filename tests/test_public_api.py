"""The public names each core module promises (httpx's habit: a test guards __all__)."""

import importlib

import pytest

MODULES = ["labkit.errors", "labkit.params", "labkit.results", "labkit.devices", "labkit.progress", "labkit.data",
           "labkit.plots", "labkit.testbeds.graphcore", "labkit.interrupts",
           # the 2025 course's packages: the small LLaMA, the local server, and their two exercises
           "labkit.llm", "labkit.serving", "labkit.testbeds.cerebras.llama2_7b", "labkit.testbeds.sambanova.inference",
           "labkit.testbeds.homework"]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name):
    module = importlib.import_module(name)
    for public in module.__all__:
        assert hasattr(module, public), "{}.{} is listed in __all__ but missing".format(name, public)


def test_core_interfaces_stay():
    from labkit import params, results

    assert {"Param", "Spec", "Config", "ParameterError"} <= set(params.__all__)
    assert {"Run", "record", "read", "collect", "compare_records"} <= set(results.__all__)


def test_llm_and_serving_interfaces_stay():
    from labkit import llm, serving

    assert {"load_corpus", "corpus_tokenizer", "build_model", "encode_text", "token_batches",
            "make_optimizer", "train_step"} <= set(llm.__all__)
    assert {"start_server", "LocalServer", "ServerStartError", "CONFIGS"} <= set(serving.__all__)
