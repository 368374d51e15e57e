"""labkit.accelerator's CUDA paths on a real GPU: the device read, bf16 autocast, a step captured as a
CUDA graph computing what eager steps compute, the probe's back-off on a real CUDA out-of-memory,
MNIST's captured steps and the scaling study's sized epoch. Skipped without CUDA (CI has no GPU);
`make test-gpu` runs them on a lent H100/H200."""

import pytest
import torch

from labkit.accelerator import CapturedStep, describe, peak_flops, probe_micro_batch, resolve_precision

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch sees none here)")

CUDA = torch.device("cuda") if torch.cuda.is_available() else None


def test_the_gpu_is_described_and_auto_is_bf16_on_ampere_or_newer():
    info = describe(CUDA)
    assert info.kind == "cuda" and info.name == torch.cuda.get_device_name() and info.memory_bytes > 10 ** 9
    if info.capability >= (8, 0):
        assert resolve_precision("auto", info).name == "bf16"
        assert resolve_precision("auto", info, launch_bound=True).name == "tf32"
        with resolve_precision("bf16", info).autocast(CUDA):
            assert (torch.randn(8, 8, device=CUDA) @ torch.randn(8, 8, device=CUDA)).dtype == torch.bfloat16
    if info.name in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
        assert peak_flops(info)[0] == 989e12


def _model_and_step(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(CUDA)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(x, y):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.detach()
    return model, optimizer, step


def test_a_captured_step_replays_what_eager_steps_compute_and_its_warmup_does_not_train():
    model, optimizer, step = _model_and_step(0)
    twin, _, twin_step = _model_and_step(0)
    batches = [(torch.randn(16, 32, device=CUDA), torch.randint(0, 4, (16,), device=CUDA)) for _ in range(5)]
    captured = CapturedStep(step, batches[0], CUDA, keep=(model, optimizer))
    assert (captured.mode, captured.capture_error) == ("cuda graph", ""), captured.capture_error
    for x, y in batches:
        torch.testing.assert_close(captured(x, y).clone(), twin_step(x, y), rtol=1e-5, atol=1e-6)
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_the_probe_backs_off_on_a_real_cuda_out_of_memory():
    # A real limit torch offers on CUDA: the caching allocator refuses beyond this fraction of the GPU.
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.empty_cache()
    torch.cuda.set_per_process_memory_fraction(min(1.0, (torch.cuda.memory_allocated() + 2 * 2 ** 30) / total))
    try:
        model = torch.nn.Sequential(torch.nn.Linear(4096, 8192), torch.nn.ReLU(), torch.nn.Linear(8192, 10)).to(CUDA)
        failures = []

        def probe(m):  # about 100 KB of activations a sample: 65,536 samples need some 6 GB
            try:
                x = torch.randn(m, 4096, device=CUDA)
                torch.nn.functional.cross_entropy(model(x), torch.zeros(m, dtype=torch.long, device=CUDA)).backward()
                model.zero_grad(set_to_none=True)
            except torch.OutOfMemoryError as exc:
                failures.append(m)
                raise exc
        micro = probe_micro_batch(65536, probe, info=describe(CUDA), key={"test": "probe"}, use_cache=False)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    assert micro.size < 65536 and failures == list(micro.tried[:-1]) and failures


def test_mnist_on_the_gpu_captures_its_steps_and_records_how_it_ran():
    from labkit.testbeds import graphcore

    config = graphcore.SPEC.validate({"device": "cuda", "epochs": 1, "max_train_samples": 4000,
                                      "max_test_samples": 800})
    run = graphcore.run_exercise(config)
    assert run.environment["launch"] == "cuda graph", run.environment.get("launch_error")
    assert run.environment["peak_memory_bytes"] > 0
    assert run.params["precision"] in ("tf32", "fp32") and run.environment["device_name"] == torch.cuda.get_device_name()
    assert run.metrics["test_accuracy"] > 50


@pytest.mark.timing
def test_the_scaling_studys_gpu_epoch_is_sized_to_last_a_second():
    from labkit.testbeds.comparison import study as scaling

    row = scaling.measure(1, 512, images_per_epoch=2048, epochs=2, device="cuda", model="small")
    assert row["launch"] == "cuda graph", row.get("launch_error")
    assert row["images_per_epoch"] > 2048 and row["epoch_s"] >= 1.0
    assert "epoch sized for the " + torch.cuda.get_device_name() in row["note"]


def _bert_without_dropout():
    from labkit import bert

    model = bert.build_model("micro", 32, seed=0)
    for module in model.modules():  # compiled and eager dropout draw different masks: compare without it
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if hasattr(module, "dropout_prob"):
            module.dropout_prob = 0.0
    return model


def test_a_compiled_bert_trains_as_its_eager_steps_do_and_the_compile_stays_in_the_warmup():
    from labkit import bert

    precision = resolve_precision("bf16", describe(CUDA))
    results = {}
    for compiled in (False, True):
        batches = bert.synthetic_batches(16, 32, 1024, seed=0)
        results[compiled] = bert.train(_bert_without_dropout(), batches, steps=4, log_steps=2, device=CUDA,
                                       progress=False, precision=precision, compile_model=compiled)
    eager, compiled = results[False], results[True]
    assert (eager.launch, compiled.launch) == ("eager", "compiled")
    torch.testing.assert_close(torch.tensor(compiled.losses), torch.tensor(eager.losses), rtol=2e-2, atol=2e-2)
    # the first step compiles; the steady figure leaves it out
    assert compiled.warmup_time > compiled.steady_seconds / 3 and compiled.steady_rate > compiled.global_rate
