"""labkit.llm: the offline corpus and its split, the cached tokenizer, the LLaMA presets, token batches."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from labkit import llm
from labkit.llm import tokenizer as tokenizer_module


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def corpus():
    return llm.load_corpus()


def test_offline_corpus_is_english_split_without_overlap(corpus):
    assert corpus.name == llm.OFFLINE_CORPUS and corpus.documents > 50
    assert len(corpus.train) > 5 * len(corpus.validation) > 20000
    assert " the " in corpus.train and " the " in corpus.validation
    train, validation = set(corpus.train.split("\n\n")), set(corpus.validation.split("\n\n"))
    long_paragraphs = {p for p in validation if len(p) > 200}
    assert long_paragraphs and not long_paragraphs & train  # held-out documents are not trained on
    assert llm.load_corpus().fingerprint == corpus.fingerprint


def test_split_is_by_key_so_adding_a_document_moves_no_other():
    documents = [("doc{}".format(i), "text {}".format(i)) for i in range(60)]
    train, validation = llm.split_documents(documents)
    assert len(train) + len(validation) == 60 and validation and train
    more_train, more_validation = llm.split_documents(list(reversed(documents)) + [("extra", "text extra")])
    assert set(train) <= set(more_train) | {"text extra"} and set(validation) <= set(more_validation)
    assert llm.split_documents([("a", "x"), ("b", "y")]) in ((["x"], ["y"]), (["y"], ["x"]))
    shared = llm.split_documents([("doc{}".format(i), "own {}\n\nshared".format(i)) for i in range(60)])
    assert all("shared" not in text for text in shared[0]) and all("shared" in text for text in shared[1])


def test_a_local_dataset_loads_through_the_hub_code(tmp_path):
    pytest.importorskip("datasets")
    folder = tmp_path / "tiny_corpus"
    folder.mkdir()
    (folder / "train.txt").write_text("The first line.\n\nThe second line.\nA third one.\n", encoding="utf-8")
    (folder / "validation.txt").write_text("Held out text.\n", encoding="utf-8")
    loaded = llm.load_corpus(str(folder))
    assert "The second line." in loaded.train and "Held out text." in loaded.validation
    assert "Held out" not in loaded.train and loaded.documents == 4


def test_an_unreachable_dataset_says_which_and_what_works_offline(tmp_path):
    pytest.importorskip("datasets")
    with pytest.raises(llm.CorpusUnavailable, match=r"corpus = '.*no_such'.*could not be loaded.*offline corpus is 'pydoc'"):
        llm.load_corpus(str(tmp_path / "no_such"))


def test_tokenizer_round_trips_any_text_and_starts_with_bos(corpus, cache):
    tokenizer = llm.corpus_tokenizer(corpus, vocab_size=512)
    assert len(tokenizer) == 512
    for text in ["def f(x):\n    return x ** 2", "Tabs\tand  spaces, ünïcode ✓ and 中文", "The quick brown fox."]:
        ids = tokenizer(text).input_ids
        assert ids[0] == tokenizer.bos_token_id == 1
        assert tokenizer.decode(ids, skip_special_tokens=True) == text
    assert (tokenizer.unk_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id) == (0, 2, 2)
    common = tokenizer(" the function returns").input_ids
    assert len(common) < len(" the function returns") / 2  # merges learnt from the corpus


def test_tokenizer_training_is_deterministic_and_cached_once(corpus, cache):
    first = llm.train_tokenizer(corpus.train.split("\n\n"), 600).to_str()
    assert llm.train_tokenizer(corpus.train.split("\n\n"), 600).to_str() == first
    path = tokenizer_module.tokenizer_path(corpus.fingerprint, 600)
    assert str(path).startswith(str(cache)) and not path.exists()
    llm.corpus_tokenizer(corpus, 600)
    assert path.read_text(encoding="utf-8") == first
    stamp = path.stat().st_mtime_ns
    again = llm.corpus_tokenizer(corpus, 600)
    assert path.stat().st_mtime_ns == stamp and again("a test").input_ids == llm.wrap_tokenizer(
        llm.train_tokenizer(corpus.train.split("\n\n"), 600))("a test").input_ids


def test_a_tokenizer_cached_by_another_tokenizers_version_is_not_read(corpus, cache, monkeypatch):
    import tokenizers

    # another environment sharing the cache wrote its file format (0.20's cannot be read by 0.19)
    with monkeypatch.context() as patch:
        patch.setattr(tokenizers, "__version__", "0.0.1")
        theirs = tokenizer_module.tokenizer_path(corpus.fingerprint, 600)
    theirs.parent.mkdir(parents=True, exist_ok=True)
    theirs.write_text("{ a format this tokenizers cannot read", encoding="utf-8")
    ours = tokenizer_module.tokenizer_path(corpus.fingerprint, 600)
    assert ours != theirs and tokenizers.__version__ in ours.name
    assert len(llm.corpus_tokenizer(corpus, 600)) == 600
    assert ours.is_file() and theirs.read_text(encoding="utf-8").startswith("{ a format")


def test_tokenizer_is_the_same_in_a_fresh_process(corpus, cache, tmp_path):
    code = ("import os; from labkit import llm; c = llm.load_corpus(); "
            "print(llm.train_tokenizer(c.train.split('\\n\\n'), 700).to_str())")
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                           env=dict(__import__("os").environ, PYTHONHASHSEED="123"))
    assert fresh.stdout.strip() == llm.train_tokenizer(corpus.train.split("\n\n"), 700).to_str()


@pytest.mark.parametrize("size", [12, 299, 70000, "2048"])
def test_a_bad_vocabulary_size_names_the_parameter(corpus, size):
    with pytest.raises(ValueError, match="vocab_size = .*allowed an integer from 300"):
        llm.corpus_tokenizer(corpus, size)


def test_presets_follow_llama2_and_count_their_parameters():
    config = llm.model_config("7b")
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.intermediate_size,
            config.vocab_size, config.max_position_embeddings) == (32, 4096, 32, 11008, 32000, 4096)
    assert config.rms_norm_eps == 1e-5 and not config.tie_word_embeddings and config.hidden_act == "silu"
    assert llm.parameter_count("7b") == 6738415616  # LLaMA-2-7B's published count
    for size in ("tiny", "small"):
        model = llm.build_model(size, vocab_size=1000)
        assert type(model).__name__ == "LlamaForCausalLM"
        assert llm.count_parameters(model) == llm.parameter_count(size, 1000)
    assert 0.5e6 < llm.parameter_count("tiny", 2048) < 2e6 and 8e6 < llm.parameter_count("small", 2048) < 20e6
    with pytest.raises(ValueError, match="model_size = 'huge' is not a LLaMA preset; allowed: 7b, small, tiny"):
        llm.model_config("huge")


def test_7b_refuses_before_allocating_when_memory_is_short():
    with pytest.raises(llm.ModelTooLarge, match=r"model_size = '7b'.*about 100 GiB.*more than this machine's 64 GiB.*"
                                                r"allowed here: small, tiny"):
        llm.build_model("7b", memory_bytes=64 * 2**30)


def test_model_forward_shape_seeded_weights_and_longer_sequences():
    model = llm.build_model("tiny", vocab_size=700, max_seq_length=1024, seed=5)
    assert model.config.max_position_embeddings == 1024
    same, other = llm.build_model("tiny", vocab_size=700, seed=5), llm.build_model("tiny", vocab_size=700, seed=6)
    assert all(torch.equal(v, same.state_dict()[k]) for k, v in model.state_dict().items())
    assert not torch.equal(model.lm_head.weight, other.lm_head.weight)
    ids = torch.randint(0, 700, (3, 600))
    out = model(input_ids=ids, labels=ids)
    assert out.logits.shape == (3, 600, 700)
    assert abs(float(out.loss.detach()) - torch.log(torch.tensor(700.0)).item()) < 0.5  # near uniform at initialisation


def test_token_batches_are_windows_reproducible_by_seed():
    ids = torch.arange(1000)
    first = [next(b) for b in [llm.token_batches(ids, 4, 16, seed=1)] for _ in range(3)]
    batches = llm.token_batches(ids, 4, 16, seed=1)
    again = [next(batches) for _ in range(3)]
    for x, y in zip(first, again):
        assert torch.equal(x["input_ids"], y["input_ids"]) and x["input_ids"].shape == (4, 16)
        assert torch.equal(x["labels"], x["input_ids"])
        assert bool(((x["input_ids"][:, 1:] - x["input_ids"][:, :-1]) == 1).all())  # contiguous text
    assert not torch.equal(next(llm.token_batches(ids, 4, 16, seed=2))["input_ids"], first[0]["input_ids"])
    with pytest.raises(ValueError, match="sequence_length = 1000: the text has only 1000 tokens"):
        next(llm.token_batches(ids, 4, 1000))


def test_encoded_corpus_starts_each_paragraph_with_bos(corpus, cache):
    tokenizer = llm.corpus_tokenizer(corpus, 512)
    ids = llm.encode_text(tokenizer, "First paragraph.\n\nSecond one.")
    assert ids.dtype == torch.long and int((ids == 1).sum()) == 2 and int(ids[0]) == 1
    assert tokenizer.decode(ids.tolist(), skip_special_tokens=True) == "First paragraph.Second one."


def test_the_optimizer_is_the_courses_and_a_step_returns_a_detached_loss():
    model = llm.build_model("tiny", vocab_size=400, seed=0)
    optimizer = llm.make_optimizer(model, learning_rate=2e-3)
    decay, no_decay = optimizer.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert decay["betas"] == (0.9, 0.95) and decay["eps"] == 1e-5 and decay["lr"] == 2e-3
    assert all(p.dim() == 1 for p in no_decay["params"]) and len(no_decay["params"]) == 2 * 2 + 1  # the RMSNorms
    ids = torch.randint(0, 400, (2, 16))
    before = model.lm_head.weight.detach().clone()
    loss = llm.train_step(model, {"input_ids": ids, "labels": ids}, optimizer)
    assert not loss.requires_grad and loss.dim() == 0
    assert not torch.equal(before, model.lm_head.weight)
    scheduler = llm.warmup_scheduler(optimizer, steps=40)  # warm-up over the first 4 steps
    rates = []
    for _ in range(6):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert rates == pytest.approx([2e-3 * f for f in (0.25, 0.5, 0.75, 1, 1, 1)])
