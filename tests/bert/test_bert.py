"""labkit.bert: presets, synthetic batches, the loss, the training loop, and the modelzoo's rates."""

from __future__ import annotations

import random
import re

import pytest
import torch

from labkit import bert

from tests.shared import missing_message, real_logs


def batches(seed, **kw):
    kw.setdefault("num_batches", 3)
    return list(bert.synthetic_batches(4, 32, 1024, seed=seed, **kw))


def test_presets_have_the_documented_shapes():
    large = bert.model_config("large", 128)
    assert (large.num_hidden_layers, large.hidden_size, large.num_attention_heads, large.intermediate_size) == \
        (24, 1024, 16, 4096)
    assert large.vocab_size == bert.BERT_VOCAB_SIZE
    tiny = bert.model_config("tiny", 128)
    assert (tiny.num_hidden_layers, tiny.hidden_size, tiny.num_attention_heads) == (2, 128, 2)
    with pytest.raises(ValueError, match="model_size='huge'.*large, base, mini, tiny, micro"):
        bert.model_config("huge")


def test_same_seed_same_weights_and_batches():
    a, b = bert.build_model("micro", 32, seed=3), bert.build_model("micro", 32, seed=3)
    c = bert.build_model("micro", 32, seed=4)
    sa, sc = a.state_dict(), c.state_dict()
    assert all(torch.equal(v, b.state_dict()[k]) for k, v in sa.items())
    assert not all(torch.equal(v, sc[k]) for k, v in sa.items())
    first, again, other = batches(1), batches(1), batches(2)
    for x, y in zip(first, again):
        assert all(torch.equal(x[k], y[k]) for k in x)
    assert not torch.equal(first[0]["input_ids"], other[0]["input_ids"])


def test_seeding_leaves_the_callers_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    bert.build_model("micro", 32, seed=0)
    assert torch.equal(torch.rand(3), expected)


def test_batch_layout_is_cls_a_sep_b_sep_with_masked_lm_labels():
    ids = bert.batches.special_ids(1024)
    for batch in bert.synthetic_batches(64, 32, 1024, seed=0, num_batches=2):
        inputs, labels, types, mask = batch["input_ids"], batch["labels"], batch["token_type_ids"], batch["attention_mask"]
        assert inputs.shape == labels.shape == types.shape == mask.shape == (64, 32)
        assert set(batch["next_sentence_label"].tolist()) <= {0, 1}
        for row in range(64):
            real = int(mask[row].sum())
            original = torch.where(labels[row] != -100, labels[row], inputs[row])[:real].tolist()
            assert original[0] == ids["cls"] and original[-1] == ids["sep"] and original.count(ids["sep"]) == 2
            assert inputs[row, real:].eq(ids["pad"]).all() and mask[row, :real].eq(1).all()
            sep = original.index(ids["sep"])
            assert types[row, :sep + 1].eq(0).all() and types[row, sep + 1:real].eq(1).all()
            chosen = (labels[row] != -100).nonzero().flatten().tolist()
            assert 1 <= len(chosen) <= round(32 * 0.15)
            assert all(0 < p < real and p != sep and p != real - 1 for p in chosen)  # words only
    # Of the chosen words, about 80% read [MASK] (BERT's 80/10/10 rule).
    big = next(bert.synthetic_batches(512, 128, 1024, seed=5))
    chosen = big["labels"] != -100
    share = big["input_ids"][chosen].eq(ids["mask"]).float().mean().item()
    assert 0.77 < share < 0.83


def test_loss_matches_bert_for_pre_training_forward():
    model = bert.build_model("micro", 32, seed=0).eval()
    batch = batches(0)[0]
    with torch.no_grad():
        reference = model(**batch).loss
        ours = bert.pretraining_loss(model, batch)
    assert ours.item() == pytest.approx(reference.item(), rel=1e-5)


def _losses(seed, data_seed=0):
    model = bert.build_model("micro", 32, seed=seed)
    data = bert.synthetic_batches(4, 32, model.config.vocab_size, seed=data_seed)
    return bert.train(model, data, steps=4, log_steps=2, device="cpu", seed=seed, progress=False)


def test_training_is_deterministic_per_seed():
    first, again, other = _losses(0), _losses(0), _losses(1)
    assert first.losses == again.losses and len(first.losses) == 4
    assert first.losses != other.losses
    assert [e.step for e in first.logs] == [2, 4]
    assert first.total_samples == 16 and first.batch_size == 4


def test_global_rate_is_samples_over_time_since_the_first_step():
    result = _losses(0)
    for entry in result.logs:
        assert entry.global_rate * entry.elapsed == pytest.approx(entry.step * 4, rel=1e-6)
    assert result.warmup_time == result.step_times[0]
    assert sum(result.step_times) == pytest.approx(result.total_time, abs=0.05)


def test_gradient_accumulation_gives_the_full_batch_gradient():
    batch = next(bert.synthetic_batches(8, 32, 1024, seed=0, short_seq_prob=0.0))
    grads = []
    for micro in (None, 2):
        model = bert.build_model("micro", 32, seed=0)
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
            if hasattr(module, "dropout_prob"):  # SDPA attention (transformers 4.x) drops out functionally
                module.dropout_prob = 0.0
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        loss = bert.train_step(model, batch, optimizer, "cpu", micro_batch_size=micro)
        grads.append((loss.item(), torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])))
    assert grads[0][0] == pytest.approx(grads[1][0], rel=1e-5)
    assert torch.allclose(grads[0][1], grads[1][1], atol=1e-6)


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def reference_rates(batch, window_seconds, smoothing=0.4):
    """Independent reference: GlobalRate = samples / seconds since start; Rate = smoothed window rate."""
    out, total_s, total_n, previous = [], 0.0, 0, None
    for steps, seconds in window_seconds:
        total_s += seconds
        total_n += steps * batch
        current = steps * batch / seconds
        previous = current if previous is None else (1 - smoothing) * current + smoothing * previous
        out.append((previous, total_n / total_s))
    return out


def test_rate_tracker_against_a_reference_computation():
    rng = random.Random(0)
    windows = [(rng.randint(1, 50), rng.uniform(0.1, 30.0)) for _ in range(20)]
    clock = FakeClock()
    tracker = bert.RateTracker(clock=clock)
    got = []
    for steps, seconds in windows:
        for _ in range(steps):
            tracker.add(64)
        clock.now += seconds
        got.append((tracker.rate(), tracker.global_rate()))
    expected = reference_rates(64, windows)
    assert [x for pair in got for x in pair] == pytest.approx([x for pair in expected for x in pair], rel=1e-12)


@pytest.mark.parametrize("name", ["student-kloiks-spring2024-bert-large-bs1024.log",
                                  "student-sarora39-spring2024-bert-large-bs2048.log",
                                  "student-xiaoruiDong-spring2024-bert-large-bs512.log",
                                  "upstream-spring2024-bert-large-MSL128-sample-output.log"])
def test_rate_tracker_reproduces_real_cs2_logs(name):
    """Replay a CS-2 run's timing (window times from its GlobalRate column): our Rate is its Rate."""
    path = real_logs("cerebras") / name
    if not path.is_file():
        pytest.skip(missing_message(path))
    text = path.read_text()
    batch = int(re.search(r"Effective batch size is (\d+)", text).group(1))
    rows = [(int(s), float(r), float(g)) for s, r, g in
            re.findall(r"Step=(\d+), Loss=[\d.]+, Rate=([\d.]+) samples/sec, GlobalRate=([\d.]+)", text)]
    clock = FakeClock()
    start = clock.now
    tracker = bert.RateTracker(clock=clock)
    done = 0
    for step, rate, global_rate in rows:
        tracker.add((step - done) * batch)
        done = step
        clock.now = start + step * batch / global_rate
        assert tracker.rate() == pytest.approx(rate, abs=0.06)  # the log rounds to 2 decimals
        assert tracker.global_rate() == pytest.approx(global_rate, abs=1e-6)
    # A plain (unsmoothed) window rate would not reproduce the log: the smoothing is real.
    plain = [(rows[i][0] - rows[i - 1][0]) * batch / (rows[i][0] * batch / rows[i][2] - rows[i - 1][0] * batch / rows[i - 1][2])
             for i in range(1, len(rows))]
    assert max(abs(p - r[1]) for p, r in zip(plain, rows[1:])) > 1.0


def test_accumulation_gives_the_whole_batch_loss_when_micro_batches_mask_different_counts():
    # Sequences of different lengths mask different numbers of tokens: each micro-batch's loss must
    # weigh by the whole batch's masked tokens, not by its share of the sequences.
    batch = next(bert.synthetic_batches(8, 32, 1024, seed=3, short_seq_prob=0.9))
    per_row = (batch["labels"] != -100).sum(dim=1)
    assert len(set(per_row[i:i + 2].sum().item() for i in range(0, 8, 2))) > 1
    losses, grads = [], []
    for micro in (None, 2):
        model = bert.build_model("micro", 32, seed=0)
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
            if hasattr(module, "dropout_prob"):
                module.dropout_prob = 0.0
        loss = bert.train_step(model, batch, torch.optim.SGD(model.parameters(), lr=0.0), "cpu", micro_batch_size=micro)
        losses.append(loss.item())
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    assert losses[1] == pytest.approx(losses[0], rel=1e-6)
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


def test_the_steady_rate_leaves_the_first_steps_compile_out_and_rate_and_global_rate_keep_the_modelzoos_meaning():
    # 60 steps of 16 sequences: the first takes 10 s (a compile), every later one 16 / 1,440 s. Rate at step 60
    # still carries a share of the compile (0.6 x this window + 0.4 x the last); GlobalRate all of it.
    clock = FakeClock()
    result = bert.TrainResult(batch_size=16, steps=60, device="cpu")
    meter = bert.StepMeter(result, 60, 20, "cpu", bert.RateTracker(clock=clock), "warmup_time", bert.LogEntry)
    for number in range(1, 61):
        clock.now += 10.0 if number == 1 else 16 / 1440  # the step's time
        meter.add(number, 16, torch.tensor(1.0))
    meter.end()
    assert result.warmup_time == pytest.approx(10.0)
    assert (result.steady_samples, result.steady_seconds) == (59 * 16, pytest.approx(59 * 16 / 1440))
    assert result.steady_rate == pytest.approx(1440)
    windows = [(20, 10.0 + 19 * 16 / 1440), (20, 20 * 16 / 1440), (20, 20 * 16 / 1440)]
    expected = reference_rates(16, windows)
    assert [(e.rate, e.global_rate) for e in result.logs] == [pytest.approx(pair) for pair in expected]
    assert result.logs[-1].rate < 0.9 * 1440 and result.logs[-1].global_rate < 0.1 * 1440


def test_a_portable_run_records_its_steady_rate_beside_globalrate():
    from labkit.testbeds.cerebras import bert_large

    config = bert_large.SPEC.validate({"model_size": "micro", "batch_size": 4, "max_steps": 3, "log_steps": 1,
                                       "max_seq_length": 16, "target": "cpu"})
    run = bert_large.run_portable(config, "cpu", echo=lambda line: None, progress=False)
    m = run.metrics
    # three steps of 4: the steady figure is the last two steps' 8 samples over the time after the first step
    assert m["steady_rate"] == pytest.approx(8 / (m["total_time"] - m["warmup_time"]), rel=0.05)
    assert m["global_rate"] == m["samples_per_sec"] == pytest.approx(12 / m["total_time"], rel=0.05)
    assert bert_large.METRICS.unit("steady_rate") == "samples/s"
    assert "steady_rate" in list(bert_large.metrics_table(run)["metric"])


def test_the_cerebras_exercise_loop_trains_and_logs_as_bert_train_does():
    # The exercise writes its loop out (run_portable's body); bert.train runs the shared one. Same model,
    # seed and batches: the same loss at every step, logged at the same steps.
    from labkit.testbeds.cerebras import bert_large

    config = bert_large.SPEC.validate({"model_size": "micro", "batch_size": 4, "max_steps": 5, "log_steps": 2,
                                       "max_seq_length": 16, "target": "cpu", "seed": 3})
    run = bert_large.run_portable(config, "cpu", echo=lambda line: None, progress=False)
    model = bert.build_model("micro", 16, seed=3)
    data = bert.synthetic_batches(4, 16, model.config.vocab_size, seed=3)
    shared = bert.train(model, data, steps=5, log_steps=2, device="cpu", learning_rate=config.learning_rate, seed=3,
                        progress=False)
    assert run.series["loss"]["y"] == shared.losses and len(shared.losses) == 5
    assert run.series["rate"]["x"] == [e.step for e in shared.logs] == [2, 4, 5]
    assert run.metrics["final_loss"] == round(shared.losses[-1], 5)
