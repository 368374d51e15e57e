"""Continuous batching changes when tokens come, not which: requests that join a running batch
at different steps, with prompts of different lengths, and leave it at different steps, get
the greedy tokens they get decoded alone (the reference: the model's own full forward pass,
no cache, one request at a time)."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from labkit.serving.engine import Engine, EngineStopped, Generation, QueueFull
from labkit.serving.model import load_model


@pytest.fixture(scope="module")
def model():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the server decodes
    yield load_model("tiny", seed=3)
    torch.set_num_threads(threads)


def _reference(model, prompt, max_tokens):
    """Greedy decoding by full forward passes over the whole sequence: no cache, no batch."""
    ids = list(prompt)
    with torch.inference_mode():
        for _ in range(max_tokens):
            token = int(model.model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
            if token == model.eos_id:
                break
            ids.append(token)
    return ids[len(prompt):]


def _tokens(gen):
    out = []
    while True:
        kind, value = gen.events.get(timeout=60)
        if kind != "token":
            assert kind == "done", value
            return out
        out.append(value)


@pytest.mark.timing
def test_batched_decoding_gives_each_request_its_own_greedy_tokens(model):
    prompts = [model.encode(text) for text in ("Hello.", "A longer prompt about caches and rotary positions.",
                                                "x", "Another one, of middle length.")]
    lengths = [12, 5, 20, 9]
    engine = Engine(model, max_batch=3, max_queue=8).start()  # 4 requests, 3 at once: the last joins later
    try:
        gens = []
        for prompt, length in zip(prompts, lengths):
            gens.append(Generation(prompt_ids=prompt, max_tokens=length, temperature=0))
            engine.submit(gens[-1])
            time.sleep(0.01)  # arrivals spread over the first steps
        got = [_tokens(gen) for gen in gens]
    finally:
        engine.stop()
    assert got == [_reference(model, p, n) for p, n in zip(prompts, lengths)]
    assert max(g.batch_size_sum / max(g.completion_tokens, 1) for g in gens) > 1  # some steps were shared


def test_a_full_engine_refuses_and_a_stopped_one_ends_what_waits(model):
    engine = Engine(model, max_batch=1, max_queue=1).start()
    first, second = (Generation(prompt_ids=model.encode("hi"), max_tokens=400) for _ in range(2))
    engine.submit(first)
    engine.submit(second)
    with pytest.raises(QueueFull, match="1 decoded at once, 1 may wait"):
        engine.submit(Generation(prompt_ids=model.encode("no"), max_tokens=4))
    engine.stop()
    assert _end(second) == _end(first) == ("error", "the server is shutting down")
    with pytest.raises(EngineStopped):
        engine.submit(Generation(prompt_ids=model.encode("late"), max_tokens=4))


def test_a_request_that_has_just_joined_the_batch_is_counted_once(model):
    """A request submitted the moment another has been prefilled, before it decodes, finds one request
    in the server: the full server's 429 is for a request beyond its places, never a false one."""
    engine = Engine(model, max_batch=1, max_queue=1)
    first, second = (Generation(prompt_ids=model.encode("hi"), max_tokens=400) for _ in range(2))
    admit, seen, tried = engine._admit, [], threading.Event()

    def admit_then_submit(gen):
        joins = admit(gen)
        if gen is first:  # on the engine thread, between the prefill and the batch's next step
            try:
                engine.submit(second)
                seen.append("accepted")
            except QueueFull as error:
                seen.append(str(error))
            tried.set()
        return joins

    engine._admit = admit_then_submit
    engine.start()
    try:
        engine.submit(first)
        assert tried.wait(60), "the engine never admitted the first request"
    finally:
        engine.stop()
    assert seen == ["accepted"]


def _end(gen):
    while True:
        kind, value = gen.events.get(timeout=10)
        if kind != "token":
            return kind, value


def test_a_saved_model_directory_is_served_with_the_same_weights(model, tmp_path):
    model.model.save_pretrained(str(tmp_path / "my-llama"))
    loaded = load_model(model_dir=str(tmp_path / "my-llama"))
    ids = model.encode("The same weights, the same logits.")
    assert loaded.name == "local/my-llama" and loaded.context_length == model.context_length
    assert torch.equal(loaded.prefill(ids)[0], model.prefill(ids)[0])
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_model(model_dir=str(tmp_path))
