"""The access token (found, never shown) and the parameters' one-sentence errors."""

import pickle
import shutil
from pathlib import Path

import pytest

from labkit.params import ParameterError
from labkit.testbeds.sambanova import inference
from labkit.testbeds.sambanova.inference.access import AccessError, Secret, find_token

FAKE = Path(__file__).resolve().parent / "fake_auth" / "inference_auth_token.py"


def test_the_courses_helper_beside_the_notebook_gives_the_token(tmp_path, monkeypatch):
    shutil.copy(str(FAKE), str(tmp_path / "inference_auth_token.py"))
    monkeypatch.setenv("LABKIT_FAKE_GLOBUS_TOKEN", "globus-abc123")
    monkeypatch.setenv("ALCF_ACCESS_TOKEN", "from-the-variable")
    token = find_token("ALCF_ACCESS_TOKEN", folder=str(tmp_path))
    assert token.reveal() == "globus-abc123" and "get_access_token" in token.source


def test_without_the_helper_the_variable_and_without_either_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv("ALCF_ACCESS_TOKEN", "from-the-variable")
    assert find_token("ALCF_ACCESS_TOKEN", folder=str(tmp_path)).reveal() == "from-the-variable"
    monkeypatch.delenv("ALCF_ACCESS_TOKEN")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AccessError) as caught:
        find_token("ALCF_ACCESS_TOKEN", folder=str(tmp_path))
    assert "python inference_auth_token.py authenticate" in str(caught.value) and "ALCF_ACCESS_TOKEN" in str(caught.value)
    assert caught.value._render_traceback_() == ["AccessError: " + str(caught.value)]


def test_a_helper_that_cannot_load_falls_back_to_the_variable_and_says_why(tmp_path, monkeypatch):
    (tmp_path / "inference_auth_token.py").write_text("import globus_sdk_not_installed\n")
    monkeypatch.delenv("ALCF_ACCESS_TOKEN", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AccessError, match="could not be loaded .ModuleNotFoundError"):
        find_token(folder=str(tmp_path))
    monkeypatch.setenv("ALCF_ACCESS_TOKEN", "tok")
    assert find_token(folder=str(tmp_path)).reveal() == "tok"


def test_a_secret_never_shows_itself():
    secret = Secret("s3cr3t-value", "the environment variable X")
    assert "s3cr3t" not in repr(secret) and "s3cr3t" not in str(secret) and "s3cr3t" not in "{}".format(secret)
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(secret)


@pytest.mark.parametrize("values, words", [
    ({"base_urls": ["local:batched", "https://inference-api.alcf.anl.gov/resource_server/metis/api/v1/"]},
     "ends in '/'"),
    ({"base_urls": ["local:batched", "https://x.org/v1/chat/completions"]}, "names the request path"),
    ({"endpoint_names": ["a", "b", "c"]}, "one entry each per endpoint"),
    ({"base_urls": ["local:batched", "https://x.org/v1"]}, "name the model https://x.org/v1 serves"),
    ({"concurrency": [1, 1]}, "each level once"),
    ({"concurrency": [0]}, "from 1 to 256"),
    ({"max_tokens": 0}, "max_tokens = 0: too small"),
    ({"log_path": ["missing.json"]}, "no such file"),
])
def test_bad_parameters_are_refused_with_the_name_and_what_is_allowed(values, words):
    with pytest.raises(ParameterError) as caught:
        inference.SPEC.validate(values)
    assert words in str(caught.value)


def test_the_documented_alcf_endpoints_validate_and_plan_without_a_request():
    metis, sophia = inference.ENDPOINTS["metis"], inference.ENDPOINTS["sophia"]
    config = inference.SPEC.validate({"endpoint_names": ["Metis", "Sophia"],
                                      "base_urls": [metis["base_url"], sophia["base_url"]],
                                      "models": [metis["model"], sophia["model"]]})
    plan = inference.plan(config)
    assert plan.path == "testbed" and "gpt-oss-120b at https://inference-api.alcf.anl.gov" in str(plan)
    assert "vLLM on Sophia" in str(plan) and "SN40L" in str(plan)
    old = inference.SPEC.validate({"endpoint_names": ["Metis"], "base_urls": [metis["base_url"]],
                                   "models": ["gpt-oss-120b-131072"]})
    assert "gpt-oss-120b-131072 (now gpt-oss-120b: renamed on Metis in January 2026)" in str(inference.plan(old))


def test_the_builtin_prompts_ship_and_a_local_file_is_read_by_datasets(tmp_path):
    assert len(inference.load_prompts("builtin", "train", "prompt", 40)) == 40  # the list again past 32
    path = tmp_path / "questions.jsonl"
    path.write_text('{"question": "Where is Argonne?"}\n{"question": ""}\n{"question": "What is Metis?"}\n')
    assert inference.load_prompts(str(path), "validation", "question", 5) == ["Where is Argonne?", "What is Metis?"]
    with pytest.raises(ValueError, match="dataset_field = 'text' is not a field.*its fields: question"):
        inference.load_prompts(str(path), "validation", "text", 5)
