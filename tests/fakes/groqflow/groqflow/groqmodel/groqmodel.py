"""GroqModel, GroqEstimatedPerformance, GroqMeasuredPerformance and groqit(), faked on the CPU."""

import json
import os
from dataclasses import dataclass

import numpy as np
import torch

import groqflow.common.build as build

#: Fixed figures, so a test can tell which GroqFlow call a number came from.
FAKE_TOTAL_CYCLES = 27000          # 30 us at 900 MHz
FAKE_MEASURED_LATENCY_S = 6.0e-5   # what benchmark() "measures" on the chip


@dataclass
class GroqEstimatedPerformance:
    pcie_input_latency: float
    compute_latency: float
    pcie_output_latency: float
    latency_units: str = "seconds"
    throughput_units: str = "inferences per second"

    @property
    def latency(self):
        return self.pcie_input_latency + self.compute_latency + self.pcie_output_latency

    @property
    def throughput(self):
        return 1.0 / self.latency


@dataclass
class GroqMeasuredPerformance:
    latency_file: str
    latency_units: str = "seconds"
    throughput_units: str = "inferences per second"

    @property
    def latency(self):
        return np.load(self.latency_file).item()

    @property
    def throughput(self):
        return 1 / self.latency


class ModelArgError(Exception):
    """GroqFlow's exception for inputs that do not match the build."""


class _State:
    def __init__(self, build_dir, shapes, dtypes, output_names):
        self.build_dir = build_dir
        self.expected_input_shapes = shapes
        self.expected_input_dtypes = dtypes
        self.expected_output_names = output_names
        self.original_inputs_file = os.path.join(build_dir, "inputs_original.npy")
        self.latency_file = os.path.join(build_dir, "latency.npy")
        self.num_chips_used = 1


class GroqModel:
    def __init__(self, state, model):
        self.state = state
        self._model = model
        self.calls = []  # what labkit asked for, for tests to inspect

    def _validate_inputs(self, inputs, function_name):
        if not isinstance(inputs, dict):
            raise ModelArgError("GroqModel.{}() received inputs of type {}, however the inputs must be a "
                                "dictionary.".format(function_name, type(inputs)))
        for name, value in inputs.items():
            expected = self.state.expected_input_shapes.get(name)
            if expected is None or tuple(value.shape) != tuple(expected):
                raise ModelArgError("Model input {} has shape {} but the model was built for {}".format(
                    name, tuple(value.shape), expected))

    def _execute(self, input_collection):
        results = []
        with torch.no_grad():
            for inputs in input_collection:
                out = self._model(**{k: torch.as_tensor(np.asarray(v)) for k, v in inputs.items()})
                tensors = [out[k] for k in self.state.expected_output_names]
                # GroqFlow converts the model to FP16 before compiling it.
                tensors = [t.half().float() for t in tensors]
                results.append(tensors[0] if len(tensors) == 1 else tuple(tensors))
        return results

    def run(self, inputs):
        self.calls.append("run")
        self._validate_inputs(inputs, "run")
        return self._execute([inputs])[0]

    def run_abunch(self, input_collection):
        self.calls.append("run_abunch")
        if input_collection is None or len(input_collection) == 0:
            raise ModelArgError("GroqModel.run_abunch() received an empty collection as input.")
        for inputs in input_collection:
            self._validate_inputs(inputs, "run_abunch")
        results = self._execute(list(input_collection))
        return results if len(results) > 1 else results[0]

    def estimate_performance(self):
        self.calls.append("estimate_performance")
        return GroqEstimatedPerformance(pcie_input_latency=1e-5, compute_latency=FAKE_TOTAL_CYCLES / 900000000,
                                        pcie_output_latency=1e-5)

    def benchmark(self, inputs=None, repetitions=100):
        self.calls.append("benchmark")
        if inputs is None:
            print("Info: No inputs received for benchmark. Using the inputs provided during model compilation.")
            inputs = np.load(self.state.original_inputs_file, allow_pickle=True).item()
        else:
            self._validate_inputs(inputs, "benchmark")
        self._execute([inputs])
        np.save(self.state.latency_file, np.array(FAKE_MEASURED_LATENCY_S))
        return GroqMeasuredPerformance(self.state.latency_file)


def groqit(model=None, inputs=None, build_name=None, cache_dir=build.DEFAULT_CACHE_DIR, monitor=True,
           rebuild=None, compiler_flags=None, assembler_flags=None, num_chips=None, groqview=False):
    build_name = build_name or "build"
    build_dir = os.path.join(cache_dir, build_name)
    os.makedirs(build_dir, exist_ok=True)
    shapes = {k: tuple(v.shape) for k, v in inputs.items()}
    dtypes = {k: str(v.dtype) for k, v in inputs.items()}
    state_file = os.path.join(build_dir, "state.json")
    if os.path.isfile(state_file):
        with open(state_file) as f:
            previous = {k: tuple(v) for k, v in json.load(f)["shapes"].items()}
        if previous != shapes and rebuild != "never":
            print('Warning: build_model() discovered a cached build of {}, but decided to rebuild for the '
                  'following reasons:\n- Input shape of model "{}" changed from {} to {} since the last time '
                  'it was built.'.format(build_name, build_name, previous, shapes))
    print('Building "{}"'.format(build_name))
    with open(state_file, "w") as f:
        json.dump({"shapes": shapes}, f)
    np.save(os.path.join(build_dir, "inputs_original.npy"), {k: v.numpy() for k, v in inputs.items()},
            allow_pickle=True)
    with torch.no_grad():
        out = model(**inputs)
    names = [k for k in ("logits", "last_hidden_state") if k in out][:1]
    state = _State(build_dir, shapes, dtypes, names)
    return GroqModel(state, model)
