"""GroqFlow 4.3.1 ``groqflow/groqmodel/groqmodel.py``: ``GroqModel`` (``run``, ``run_abunch``,
``benchmark``, ``estimate_performance``) and its two performance records, executed on the CPU.

- Inputs (``_validate_inputs``, ``_validate_input_collection``): a non-dict is a ``ModelArgError``;
  other shapes or types than the build's (types as after the FP16 conversion: float32 -> float16,
  int64 -> int32) are an ``Error`` "Model built to always take input of shape ..." (onnxflow
  ``tensor_helpers.check_shapes_and_dtypes``).
- Execution (``_execute``, ``_execute_locally``): more than 8 chips is an ``Error``; then
  ``sdk.check_dependencies(require_runtime=True, require_devtools=True)`` (an ``EnvError`` without
  the SDK); then ``sdk.get_num_chips_available()``: a build for more chips than the machine has is a
  ``ModelRuntimeError`` "Trying to execute a model compiled for N GroqChip processors but this
  machine only has M GroqChip processors available."; then the SDK's program runs the build
  (``groqmodel_execute_exe``, else ``python execute.py``) with sys.stderr sent to the build's
  ``log_execute.txt``; when it exits with an error, a ``ModelRuntimeError`` "Failed while trying
  to run GroqChips locally. Refer to **LOG** for details." ("Failed to bringup GroqChip topology."
  when its stderr says so), raised with sys.stderr still sent to that log, where its message goes.
  The stand-in node's program fails after ``groqnode.chip_fault`` (tests/fakes/groqnode.py).
- Results (``_unpack_results_file``): one tensor per ONNX output, a tuple when there are several;
  ``run_abunch`` gives a list for several inputs and a single result for one. The model runs in
  PyTorch on the host and every output is rounded to float16, as the chip computes in FP16.
- ``estimate_performance``: ``total_cycles`` from the compiler's stats / 900 MHz, times
  ``num_chips_used`` unless ``--no-multichip-pipelining`` was a compiler flag (a pipelined
  build reports one stage's cycles); PCIe: bytes / 24 GB/s + 10 us each way.
- ``benchmark(inputs=None)``: the compile-time inputs (with ``log_info``'s "No inputs received for
  benchmark ..."); the latency is ``FAKE_MEASURED_LATENCY_S``, written to the latency file.

``GroqModel.calls`` (not in GroqFlow) lists the methods called, for tests.
"""

import json
import os
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

import groqflow.common.build as build
import groqflow.common.sdk_helpers as sdk
import onnxflow.common.exceptions as exp
import onnxflow.common.printing as printing

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


class State:
    """The parts of ``build.GroqState`` that GroqModel reads, saved as JSON in the build directory."""

    def __init__(self, cache_dir, config, shapes, dtypes):
        self.cache_dir = cache_dir
        self.config = config
        self.expected_input_shapes = shapes
        self.expected_input_dtypes = dtypes
        self.expected_output_names = []
        self.downcast_applied = False
        self.num_chips_used = None
        # build.GroqInfo: attributes, None until a stage sets them
        self.info = SimpleNamespace(num_parameters=None, compiled_model_input_bytes=None,
                                    compiled_model_output_bytes=None)
        self.build_status = "partial"
        self.model_hash = self.uid = self.groqflow_version = self.onnxflow_version = None

    @property
    def build_dir(self):
        return os.path.join(self.cache_dir, self.config["build_name"])

    def _file(self, name):
        return os.path.join(self.build_dir, name)

    base_onnx_file = property(lambda self: self._file("onnx/{}-op16-base.onnx".format(self.config["build_name"])))
    opt_onnx_file = property(lambda self: self._file("onnx/{}-op16-opt.onnx".format(self.config["build_name"])))
    original_inputs_file = property(lambda self: self._file("inputs_original.npy"))
    latency_file = property(lambda self: self._file("latency.npy"))
    stats_file = property(lambda self: self._file("compile/stats.json"))

    @property
    def topology(self):
        return build.supported_topology(build.GROQCARD_A14, self.config["topology"]).get(self.num_chips_used, "Unknown")

    def save(self):
        fields = {k: getattr(self, k) for k in ("config", "expected_output_names", "downcast_applied",
                                                 "num_chips_used", "build_status", "expected_input_dtypes",
                                                 "model_hash", "uid", "groqflow_version", "onnxflow_version")}
        fields["info"] = vars(self.info)
        fields["expected_input_shapes"] = {k: list(v) for k, v in self.expected_input_shapes.items()}
        with open(self._file("state.json"), "w") as f:
            json.dump(fields, f)

    @classmethod
    def load(cls, cache_dir, build_name):
        path = os.path.join(cache_dir, build_name, "state.json")
        if not os.path.isfile(path):
            return None
        with open(path) as f:
            fields = json.load(f)
        state = cls(cache_dir, fields.pop("config"), {k: tuple(v) for k, v in fields.pop("expected_input_shapes").items()},
                    fields.pop("expected_input_dtypes"))
        state.info = SimpleNamespace(**fields.pop("info"))
        state.__dict__.update(fields)
        return state


class _BufferedFile:
    """A log file opened for writing whose text reaches the disk only when flushed, as an open
    Python file's buffer does (without holding an OS file open in the tests)."""

    def __init__(self, path):
        self.name = path
        self._pending = []
        open(path, "w", encoding="utf8").close()

    def write(self, text):
        self._pending.append(text)

    def flush(self):
        with open(self.name, "a", encoding="utf8") as f:
            f.write("".join(self._pending))
        self._pending = []


class ExecuteLogger:
    """onnxflow ``build.Logger(log_path)``: writes go to ``log_file`` only, ``flush()`` does nothing,
    and ``terminal`` is the sys.stdout of the moment it was made."""

    def __init__(self, log_path):
        import sys

        self.terminal = sys.stdout
        self.log_file = _BufferedFile(log_path)

    def write(self, message):
        self.log_file.write(message)

    def flush(self):
        pass


class GroqModel:
    def __init__(self, state, model):
        self.state = state
        self._model = model
        self.calls = []
        self.log_execute_path = os.path.join(state.build_dir, "log_execute.txt")

    def __call__(self, **kwargs):  # PytorchModelWrapper
        return self.run(kwargs)

    def _validate_inputs(self, inputs, function_name, from_collection=False):
        if not isinstance(inputs, dict):
            raise exp.ModelArgError("GroqModel.{}() {}received inputs of type {}, however the inputs must be a "
                                    "dictionary.".format(function_name, "input_collection " if from_collection else "",
                                                         type(inputs)))
        from groqflow.justgroqit.groqit import shapes_and_dtypes

        shapes, dtypes = shapes_and_dtypes(inputs)
        if self.state.downcast_applied:
            dtypes = {k: {"float32": "float16", "int64": "int32"}.get(v, v) for k, v in dtypes.items()}
        if shapes != self.state.expected_input_shapes:
            raise exp.Error("\nModel built to always take input of shape\n{} but got {}\n".format(
                self.state.expected_input_shapes, shapes))
        if dtypes != self.state.expected_input_dtypes:
            raise exp.Error("\nModel built to always take input of types\n{} but got {}\n".format(
                self.state.expected_input_dtypes, dtypes))

    def _validate_input_collection(self, input_collection, function_name):
        if input_collection is None:
            raise exp.ModelArgError("GroqModel.{}() received an input_collection with type {}, however the "
                                    "input_collection arg must be a collection of dictionaries.".format(
                                        function_name, type(input_collection)))
        if len(input_collection) == 0:
            raise exp.ModelArgError("GroqModel.{}() received an empty collection as input.".format(function_name))
        for inputs in input_collection:
            self._validate_inputs(inputs, function_name, True)

    def _execute(self, input_collection):
        import torch

        if not isinstance(input_collection, list):
            raise ValueError("Expected arg input_collection to be a list but received {}.".format(type(input_collection)))
        if self.state.num_chips_used > 8:
            raise exp.Error("Groqit's num_chips_used was set to {}, but the current runtime only allows for up to 8 "
                            "GroqChips.".format(self.state.num_chips_used))
        sdk.check_dependencies(require_runtime=True, require_devtools=True)
        chips_available = sdk.get_num_chips_available()
        if self.state.num_chips_used > chips_available:
            raise exp.ModelRuntimeError(
                "Trying to execute a model compiled for {} GroqChip processors but this machine only has {} GroqChip "
                "processors available.".format(self.state.num_chips_used, chips_available))
        self._execute_on_chips()
        results = []
        with torch.no_grad():
            for inputs in input_collection:
                out = self._model(**{k: torch.as_tensor(np.asarray(v)) for k, v in inputs.items()})
                if hasattr(out, "to_tuple"):
                    out = out.to_tuple()
                elif isinstance(out, dict):
                    out = tuple(out.values())
                elif not isinstance(out, (tuple, list)):
                    out = (out,)
                tensors = [torch.tensor(t.detach().cpu().numpy().astype(np.float16))
                           for t in out[:len(self.state.expected_output_names)]]
                results.append(tensors[0] if len(tensors) == 1 else tuple(tensors))
        return results

    def _execute_on_chips(self, repetitions=1):
        """``_execute_locally``'s run of the SDK's program: ``groqmodel_execute_exe`` (else
        ``python execute.py``, which imports the SDK's ``groq.api``) with stderr sent to the build's
        ``log_execute.txt``. When it fails, the ModelRuntimeError is raised with sys.stderr still
        sent there (the real code restores it only after a success, and then to the stdout of the
        moment it redirected it), so its printed message lands in that log, not on the screen."""
        import shutil
        import subprocess
        import sys

        if shutil.which("groqmodel_execute_exe"):
            script = ["groqmodel_execute_exe"]
        else:
            script = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "execute.py")]
        cmd = script + [str(self.state.num_chips_used), self.state.build_dir, self.state._file("outputs.npy"),
                        self.state.latency_file, self.state.topology, str(repetitions)]
        sys.stderr = ExecuteLogger(self.log_execute_path)
        try:
            output = subprocess.check_output(cmd)
            print(output.decode("utf-8"), file=sys.stderr)
            sys.stderr = sys.stderr.terminal
        except subprocess.CalledProcessError as e:
            with open(self.log_execute_path, "r", encoding="utf-8") as f:
                subprocess_stderr = f.read()
            if "in bringup_topology" in subprocess_stderr:
                msg = "Failed to bringup GroqChip topology. "
            else:
                msg = "Failed while trying to run GroqChips locally. "
            msg = msg + "Refer to **{}** for details.".format(self.log_execute_path)
            raise exp.ModelRuntimeError(msg) from e

    def run(self, inputs):
        self.calls.append("run")
        self._validate_inputs(inputs, "run")
        return self._execute([inputs])[0]

    def run_abunch(self, input_collection):
        self.calls.append("run_abunch")
        self._validate_input_collection(input_collection, "run_abunch")
        results = self._execute(list(input_collection))
        return results if len(results) > 1 else results[0]

    def estimate_performance(self):
        self.calls.append("estimate_performance")
        with open(self.state.stats_file) as f:
            cycles = json.load(f)["total_cycles"]
        info = vars(self.state.info)
        compute = cycles / 900000000
        if "--no-multichip-pipelining" not in self.state.config["compiler_flags"]:
            compute *= self.state.num_chips_used
        return GroqEstimatedPerformance(pcie_input_latency=info["compiled_model_input_bytes"] / 24e9 + 1e-5,
                                        compute_latency=compute,
                                        pcie_output_latency=info["compiled_model_output_bytes"] / 24e9 + 1e-5)

    def benchmark(self, inputs=None, repetitions=100):
        self.calls.append("benchmark")
        if inputs is None:
            printing.log_info("No inputs received for benchmark. Using the inputs provided during model compilation.")
            inputs = np.load(self.state.original_inputs_file, allow_pickle=True).item()
        else:
            self._validate_inputs(inputs, "benchmark")
        self._execute([inputs])
        np.save(self.state.latency_file, np.array(FAKE_MEASURED_LATENCY_S))
        return GroqMeasuredPerformance(self.state.latency_file)
