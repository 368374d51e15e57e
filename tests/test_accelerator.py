"""labkit.accelerator on the CPU: the policy's decisions for a table of devices, the micro-batch probe's
back-off on a real out-of-memory error and its cache, accumulation, eager steps, peaks and MFU.

GPU-only paths are exercised through their *inputs* (a DeviceInfo of a GPU that is not here) and
real CPU torch; what needs CUDA itself is in tests/gpu/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from labkit import accelerator
from labkit.accelerator import (AcceleratorError, CapturedStep, DeviceInfo, MicroBatch, NothingFits,
                                choose_micro_batch, is_out_of_memory, measure_step_seconds, mfu, peak_flops,
                                probe_micro_batch, resolve_precision)
from labkit.errors import LabkitError

GB = 10 ** 9
H200 = DeviceInfo("cuda", "NVIDIA H200", (9, 0), 141 * GB)
H100 = DeviceInfo("cuda", "NVIDIA H100 80GB HBM3", (9, 0), 80 * GB)
A100 = DeviceInfo("cuda", "NVIDIA A100-SXM4-40GB", (8, 0), 40 * GB, count=4)
V100 = DeviceInfo("cuda", "Tesla V100-SXM2-16GB", (7, 0), 16 * GB)
CPU = DeviceInfo("cpu", "x86_64")
MPS = DeviceInfo("mps", "Apple MPS")


# --- precision ------------------------------------------------------------------------------------

@pytest.mark.parametrize("info, requested, expected", [
    (H200, "auto", "bf16"), (H100, "auto", "bf16"), (A100, "auto", "bf16"), (V100, "auto", "fp32"),
    (CPU, "auto", "fp32"), (MPS, "auto", "fp32"),
    (H200, "fp32", "fp32"), (H200, "tf32", "tf32"), (H200, "bf16", "bf16"), (A100, "tf32", "tf32"),
    (V100, "fp32", "fp32"), (CPU, "fp32", "fp32"), (CPU, "bf16", "bf16"), (MPS, "fp32", "fp32"),
])
def test_precision_for_each_device(info, requested, expected):
    precision = resolve_precision(requested, info)
    assert precision.name == expected
    assert "precision={!r}".format(requested) in precision.why


def test_auto_says_why_in_the_plans_words():
    assert resolve_precision("auto", H200).why == (
        "precision='auto': bf16 autocast on the NVIDIA H200 (compute capability 9.0, 141 GB)")
    assert resolve_precision("auto", CPU).why == "precision='auto': fp32 on the CPU, as before"
    assert "older than Ampere" in resolve_precision("auto", V100).why


def test_a_launch_bound_step_takes_tf32_where_bf16_would_add_casts():
    assert resolve_precision("auto", H200, launch_bound=True).name == "tf32"
    assert resolve_precision("auto", V100, launch_bound=True).name == "fp32"  # no TF32 before Ampere
    assert resolve_precision("auto", CPU, launch_bound=True).name == "fp32"
    assert resolve_precision("bf16", H200, launch_bound=True).name == "bf16"  # asked for: honoured


@pytest.mark.parametrize("info, requested, allowed", [
    (V100, "tf32", "'auto', 'fp32'"), (V100, "bf16", "'auto', 'fp32'"), (CPU, "tf32", "'auto', 'fp32', 'bf16'"),
    (MPS, "bf16", "'auto', 'fp32'"), (MPS, "tf32", "'auto', 'fp32'"),
])
def test_an_unsupported_precision_is_refused_naming_the_device_and_what_is_allowed(info, requested, allowed):
    with pytest.raises(AcceleratorError) as error:
        resolve_precision(requested, info)
    message = str(error.value)
    assert message.startswith("precision={!r} is not available on {}".format(requested, info.describe()))
    assert "allowed there: " + allowed in message
    assert isinstance(error.value, LabkitError) and isinstance(error.value, ValueError)


def test_an_unknown_precision_lists_the_allowed_ones():
    with pytest.raises(AcceleratorError, match=r"precision='fp16' is not a precision; allowed: 'auto', 'fp32', "
                                               r"'tf32', 'bf16'"):
        resolve_precision("fp16", H200)


def test_bf16_autocast_computes_in_bf16_and_fp32_does_not():
    x, w = torch.randn(4, 8), torch.randn(8, 3)
    with resolve_precision("bf16", CPU).autocast(torch.device("cpu")):
        assert (x @ w).dtype == torch.bfloat16
    with resolve_precision("fp32", CPU).autocast(torch.device("cpu")):
        assert (x @ w).dtype == torch.float32


def test_tf32_is_set_for_the_block_and_restored_after():
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        with resolve_precision("tf32", H200).autocast(H200):
            assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
        assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = True  # cuDNN's default: fp32 means fp32 inside the block
        with resolve_precision("fp32", H200).autocast(H200):
            assert not torch.backends.cudnn.allow_tf32
        assert torch.backends.cudnn.allow_tf32
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _flags():
    return torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32


def _bert_step(precision, seen):
    from labkit import bert

    model = bert.build_model("micro", 16, seed=0)
    next(model.parameters()).register_hook(lambda grad: seen.append(_flags()))
    batch = next(bert.synthetic_batches(4, 16, model.config.vocab_size, seed=0))
    bert.train_step(model, batch, bert.make_optimizer(model), "cpu", precision=precision)


def _llama_step(precision, seen):
    from labkit import llm

    model = llm.build_model("tiny", vocab_size=64, max_seq_length=16, seed=0)
    next(model.parameters()).register_hook(lambda grad: seen.append(_flags()))
    ids = torch.randint(0, 64, (2, 16))
    llm.train_step(model, {"input_ids": ids, "labels": ids}, llm.make_optimizer(model), "cpu", precision=precision)


def _mnist_step(precision, seen):
    from labkit.testbeds.graphcore import train
    from labkit.testbeds.graphcore.model import build_model

    model = build_model(0, torch.device("cpu"))
    params = list(model.parameters())
    params[0].register_hook(lambda grad: seen.append(_flags()))
    images, labels = torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))
    step = train.step_function(model, images, labels, params, 8, 2, 0.01, precision)
    step(torch.arange(16))


@pytest.mark.parametrize("train_step", [_bert_step, _llama_step, _mnist_step])
@pytest.mark.parametrize("name, inside", [("tf32", (True, True)), ("fp32", (False, False))])
def test_the_precisions_flags_hold_in_backward_and_are_restored_after_the_step(train_step, name, inside):
    # Backward runs after the forward's autocast block has ended: a hook on the first weight's gradient
    # (computed last in backward) sees the flags the step's backward ran under.
    before = _flags()
    try:
        for start in ((False, True), (True, False)):
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = start
            seen = []
            train_step(resolve_precision(name, H200), seen)
            assert seen and set(seen) == {inside}
            assert _flags() == start
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def test_describe_reads_the_cpu():
    info = accelerator.describe(torch.device("cpu"))
    assert (info.kind, info.capability, info.memory_bytes, info.count) == ("cpu", None, None, 1)
    assert accelerator.device_info(H200) is H200


def test_every_testbed_named_in_reports_has_its_precision():
    assert {"cs2", "cs3", "ipu", "sn30", "groq"} <= set(accelerator.TESTBED_PRECISION)
    assert "mixed" in accelerator.TESTBED_PRECISION["cs2"] and "fp32" in accelerator.TESTBED_PRECISION["ipu"]


# --- micro-batches: the real out-of-memory back-off ---------------------------------------------

# The most real out-of-memory torch offers on a CPU: a child process whose address space is limited
# (RLIMIT_AS) a little above what it uses, so the CPU allocator's own allocation fails inside a real
# forward/backward/optimizer step and torch raises its RuntimeError "DefaultCPUAllocator: can't allocate
# memory". (torch.cuda.set_per_process_memory_fraction would be the CUDA one; it needs a GPU.)
#
# What a failed probe allocated must be freed before the back-off releases memory (its gc.collect and, on
# CUDA, empty_cache): a gc callback sees, at each collection, the bytes still held by tensors the failed
# probes made, and the bytes of all live tensors against what they were before the first probe.
_CHILD = textwrap.dedent("""
    import gc, json, resource, sys, weakref
    import torch
    from labkit.accelerator import DeviceInfo, probe_micro_batch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    failures, made, collections = [], {}, []
    def live_bytes():
        return sum(t.nbytes for t in gc.get_objects() if isinstance(t, torch.Tensor))
    def probe(m):
        try:
            x, y = torch.randn(m, 1024), torch.randint(0, 10, (m,))
            made[m] = [weakref.ref(x), x.nbytes]
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        except BaseException as exc:
            failures.append([m, type(exc).__name__, str(exc)[:200]])
            raise
    def at_collection(phase, info):
        failed = [f[0] for f in failures]
        if phase == "stop" and failed and made:
            held = sum(made[m][1] for m in failed if made[m][0]() is not None)
            collections.append([failed[-1], held, live_bytes()])
    probe(1)  # lazy allocations happen before the limit
    before = live_bytes()
    if sys.argv[1] == "limited":
        used = int([l for l in open("/proc/self/status") if l.startswith("VmSize")][0].split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (used + 64 * 2 ** 20, resource.RLIM_INFINITY))
    gc.callbacks.append(at_collection)
    micro = probe_micro_batch(4096, probe, info=DeviceInfo("cpu", "test"), key={}, use_cache=False)
    gc.callbacks.remove(at_collection)
    print(json.dumps({"size": micro.size, "accumulation": micro.accumulation, "tried": micro.tried,
                      "failures": failures, "why": micro.why(), "before": before, "collections": collections}))
""")


def _probe_in_child(mode):
    done = subprocess.run([sys.executable, "-c", _CHILD, mode], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_probe_backs_off_on_a_real_allocation_failure_to_the_largest_micro_batch_that_fits():
    free = _probe_in_child("unlimited")
    assert (free["size"], free["failures"]) == (4096, [])  # without the limit the whole batch fits
    limited = _probe_in_child("limited")
    size = limited["size"]
    assert 1 <= size < 4096 and size * limited["accumulation"] == 4096
    assert limited["tried"] == [d for d in (4096, 2048, 1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1) if d >= size]
    assert [f[0] for f in limited["failures"]] == limited["tried"][:-1]
    for _, kind, text in limited["failures"]:
        assert kind in ("RuntimeError", "OutOfMemoryError") and "can't allocate memory" in text
    assert "ran out of memory" in limited["why"]
    # every failed size was followed by the back-off's collection, which found its tensors freed and
    # the live tensors back to their bytes before the first probe
    assert {c[0] for c in limited["collections"]} == set(limited["tried"][:-1])
    for failed, held, live in limited["collections"]:
        assert held == 0, "{} bytes of the probe at micro-batch {} still held".format(held, failed)
        assert live == limited["before"]


def _huge_unless_fits(limit, calls):
    """A probe whose allocation the CPU allocator really refuses above ``limit`` (2**40 bytes a sample)."""
    def probe(m):
        calls.append(m)
        if m > limit:
            torch.empty(m * 2 ** 40, dtype=torch.uint8)
        torch.ones(m).sum()
    return probe


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_CACHE_DIR", str(tmp_path))
    return tmp_path / "accelerator"


def test_auto_on_a_gpu_probes_then_reads_the_cache(cache):
    calls = []
    first = choose_micro_batch("auto", 1024, _huge_unless_fits(256, calls), device=H200, key={"model": "m", "seq": 128})
    assert (first.size, first.accumulation, first.source, first.tried) == (256, 4, "probed", (1024, 512, 256))
    assert calls == [1024, 512, 256]
    assert first.why() == "micro-batch 256 x 4 accumulated = global batch 1024 (probed: 1024, 512 ran out of memory)"
    files = list(cache.glob("micro-batch-*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["micro_batch"] == 256
    again = choose_micro_batch("auto", 1024, _huge_unless_fits(256, calls), device=H200, key={"model": "m", "seq": 128})
    assert (again.size, again.source) == (256, "cached") and calls == [1024, 512, 256]  # no probe this time
    assert "as probed before" in again.why()


@pytest.mark.parametrize("change", [
    {"device": H100}, {"device": DeviceInfo("cuda", "NVIDIA H200", (9, 0), 80 * GB)}, {"key": {"model": "m", "seq": 512}},
    {"key": {"model": "m", "seq": 128, "precision": "fp32"}}, {"key": {"model": "other", "seq": 128}},
])
def test_the_cache_key_is_the_device_memory_model_sequence_and_precision(cache, change):
    calls = []
    choose_micro_batch("auto", 64, _huge_unless_fits(16, calls), device=H200, key={"model": "m", "seq": 128})
    calls.clear()
    micro = choose_micro_batch("auto", 64, _huge_unless_fits(8, calls), device=change.get("device", H200),
                               key=change.get("key", {"model": "m", "seq": 128}))
    assert (micro.size, micro.source, calls) == (8, "probed", [64, 32, 16, 8])
    assert len(list(cache.glob("micro-batch-*.json"))) == 2


def test_the_cache_key_has_transformers_version_and_the_callers_eager_or_compiled(cache):
    from importlib.metadata import version

    _, full = accelerator.micro_batch_cache_file({"model": "m", "launch": "eager"}, H200, 64)
    assert full["transformers"] == version("transformers") and full["key"]["launch"] == "eager"
    compiled, _ = accelerator.micro_batch_cache_file({"model": "m", "launch": "compiled"}, H200, 64)
    assert compiled != accelerator.micro_batch_cache_file({"model": "m", "launch": "eager"}, H200, 64)[0]


def _with_free(info, free):
    return DeviceInfo(info.kind, info.name, info.capability, info.memory_bytes, info.count, free)


def test_a_probe_taken_with_little_memory_free_is_taken_again_when_more_is_free(cache):
    # Another process held 100 GB of the H200 at the first probe: 16 fitted. With the GPU free again the
    # probe runs anew (and 64 fits); with about as little free as before, the cached size stands.
    calls = []
    first = choose_micro_batch("auto", 64, _huge_unless_fits(16, calls), device=_with_free(H200, 41 * GB), key={})
    assert (first.size, first.source) == (16, "probed")
    saved = json.loads(next(cache.glob("micro-batch-*.json")).read_text())
    assert saved["free_bytes"] == 41 * GB
    same = choose_micro_batch("auto", 64, _huge_unless_fits(64, calls), device=_with_free(H200, 45 * GB), key={})
    assert (same.size, same.source) == (16, "cached")
    freed = choose_micro_batch("auto", 64, _huge_unless_fits(64, calls), device=_with_free(H200, 140 * GB), key={})
    assert (freed.size, freed.source) == (64, "probed")
    assert json.loads(next(cache.glob("micro-batch-*.json")).read_text())["free_bytes"] == 140 * GB


@pytest.mark.parametrize("garbage", ["{not json", json.dumps({"for": "something else", "micro_batch": 8}), "",
                                     "[1, 2]"])
def test_a_corrupt_or_foreign_cache_file_is_probed_again_and_rewritten(cache, garbage):
    path, _ = accelerator.micro_batch_cache_file({"model": "m"}, H200, 64)
    path.parent.mkdir(parents=True)
    path.write_text(garbage)
    calls = []
    micro = choose_micro_batch("auto", 64, _huge_unless_fits(32, calls), device=H200, key={"model": "m"})
    assert (micro.size, micro.source, calls) == (32, "probed", [64, 32])
    assert json.loads(path.read_text())["micro_batch"] == 32


def test_a_cached_size_that_no_longer_divides_the_batch_is_ignored(cache):
    path, full = accelerator.micro_batch_cache_file({"model": "m"}, H200, 64)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"for": full, "micro_batch": 48}))
    micro = choose_micro_batch("auto", 64, _huge_unless_fits(64, []), device=H200, key={"model": "m"})
    assert (micro.size, micro.source) == (64, "probed")


def test_nothing_fits_is_a_clear_memory_error(cache):
    with pytest.raises(NothingFits, match=r"Even a micro-batch of 1 ran out of memory on the NVIDIA H200 .*tried 4, 2, 1"):
        choose_micro_batch("auto", 4, _huge_unless_fits(0, []), device=H200, key={})
    assert issubclass(NothingFits, MemoryError) and issubclass(NothingFits, LabkitError)
    assert not cache.exists() or not list(cache.iterdir())


def test_an_error_that_is_not_out_of_memory_propagates_and_is_not_cached(cache):
    def broken(m):
        raise ValueError("shapes do not match")
    with pytest.raises(ValueError, match="shapes do not match"):
        choose_micro_batch("auto", 8, broken, device=H200, key={})
    assert not cache.exists() or not list(cache.iterdir())


@pytest.mark.parametrize("info", [CPU, MPS])
def test_auto_off_a_gpu_takes_the_whole_batch_without_probing(info, cache):
    calls = []
    micro = choose_micro_batch("auto", 1024, _huge_unless_fits(0, calls), device=info, key={})
    assert (micro.size, micro.accumulation, micro.source, calls) == (1024, 1, "whole batch", [])
    assert micro.why() == "micro-batch 1024 = the global batch (no probe off a GPU)"
    assert choose_micro_batch("auto", 8, None, device=torch.device("cpu"), key={}).size == 8


def test_an_asked_micro_batch_is_checked_against_the_global_batch():
    assert choose_micro_batch(64, 1024, None, device=H200, key={}) == MicroBatch(64, 16, "asked")
    with pytest.raises(AcceleratorError, match=r"micro_batch_size=48 does not divide the global batch 1024; allowed: "
                                               r"'auto' or one of 1, 2, 4, .*, 512, 1024"):
        choose_micro_batch(48, 1024, None, device=H200, key={})
    for bad in ("big", 2.5, True, 0, -8):
        with pytest.raises(AcceleratorError, match="micro_batch_size="):
            choose_micro_batch(bad, 1024, None, device=H200, key={})
    with pytest.raises(AcceleratorError, match="global batch=0"):
        choose_micro_batch("auto", 0, None, device=H200, key={})


def test_out_of_memory_is_told_from_other_errors():
    try:
        torch.empty(2 ** 62, dtype=torch.uint8)  # the CPU allocator's own refusal
    except RuntimeError as exc:
        assert is_out_of_memory(exc)
    else:
        pytest.fail("torch allocated 4 EiB")
    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_out_of_memory(MemoryError())
    assert not is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    assert not is_out_of_memory(ValueError("out of memory"))


# --- how a step is launched ----------------------------------------------------------------------

def test_a_captured_step_is_eager_on_the_cpu_and_computes_the_same():
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    twin = torch.nn.Linear(6, 3)
    twin.load_state_dict(model.state_dict())
    twin_optimizer = torch.optim.SGD(twin.parameters(), lr=0.1)
    x, y = torch.randn(8, 6), torch.randn(8, 3)

    def step_of(net, opt):
        def step(xs, ys):
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(net(xs), ys)
            loss.backward()
            opt.step()
            return loss.detach()
        return step

    step = CapturedStep(step_of(model, optimizer), (x, y), torch.device("cpu"), keep=(model, optimizer))
    assert (step.mode, step.why) == ("eager", "eager (no capture off a GPU)")
    for _ in range(3):
        assert torch.equal(step(x, y), step_of(twin, twin_optimizer)(x, y))
    assert torch.equal(model.weight, twin.weight)  # no warm-up step trained it


def test_launch_modes_are_checked():
    with pytest.raises(AcceleratorError, match="launch mode='cuda graph' needs a CUDA GPU; the CPU is not one"):
        CapturedStep(lambda: None, (), CPU, mode="cuda graph")
    with pytest.raises(AcceleratorError, match="launch mode='graph': allowed: 'auto', 'cuda graph', 'compiled', 'eager'"):
        CapturedStep(lambda: None, (), CPU, mode="graph")


def test_measure_step_seconds_runs_warmup_and_repeats_and_takes_their_median():
    calls = []
    seconds = measure_step_seconds(lambda: calls.append(sum(range(1000))), torch.device("cpu"), warmup=2, repeats=5)
    assert len(calls) == 7 and 0 < seconds < 60
    with pytest.raises(AcceleratorError, match="repeats=0"):
        measure_step_seconds(lambda: None, CPU, repeats=0)


# --- peaks and MFU --------------------------------------------------------------------------------

def test_named_peaks_and_mfu():
    assert peak_flops(H200) == (989e12, "bf16 dense peak of the NVIDIA H200, 989 TFLOP/s")
    assert peak_flops(A100) == (312e12, "bf16 dense peak of the NVIDIA A100-SXM4-40GB, 312 TFLOP/s")
    assert mfu(494.5e12, H200) == pytest.approx(0.5)
    assert mfu(156e12, A100) == pytest.approx(0.5)
    assert peak_flops(V100) is None and mfu(1e12, V100) is None  # no named bf16 peak: no guessed MFU
    assert peak_flops(CPU) is None and mfu(1e12, CPU) is None
    assert mfu(float("nan"), H200) is None



def test_utilisation_is_what_a_gpu_run_records():
    figures, note = accelerator.utilisation(494.5e12, H200)
    assert figures == {"model_tflops": 494.5, "mfu": 0.5}
    assert "NVIDIA H200" in note and "989 TFLOP/s" in note
    assert accelerator.utilisation(1e12, V100) == ({"model_tflops": 1.0}, None)  # no named peak: no MFU, no note
