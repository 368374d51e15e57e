"""GroqFlow 4.3.1 ``groqit()`` (``groqflow/justgroqit/groqit.py``, ``ignition.py``, ``export.py``,
``compile.py``; the stages' framework is mlagility 3.3.1 ``onnxflow/justbuildit/stage.py`` and
``export.py``), faked as far as it can run without the GroqWare SDK.

The PyTorch sequence (``ignition.default_pytorch_sequence``), stage by stage:

1. ``export_pytorch`` (onnxflow ``ExportPytorchModel.fire``): input names checked against
   ``forward`` (``ValueError``), ``torch.onnx.export`` at opset 16 with constant folding, the
   output names read from the ONNX graph, the inputs saved to ``inputs_original.npy``. Real.
2. ``optimize_onnx`` (onnxflow ``OptimizeOnnxModel.fire``): ONNX Runtime, basic graph
   optimizations, the optimized model saved. Real.
3. ``check_compatibility`` (groqflow ``export.CheckOnnxCompatibility.fire``): first
   ``sdk.check_dependencies(require_devtools=True, exception_type=StageError)`` -- without the
   SDK this is where groqit stops: ``EnvError`` on an OS other than Ubuntu or Rocky Linux (its OS
   check ignores exception_type), ``StageError`` when groq-devtools is missing. Then the op check
   (``onnx_helpers.check_ops``): the SDK's ``onnxmodelanalyzer -u -i OPT.onnx`` (found by
   ``sdk.find_tool``: PATH, then /usr/local/groq/bin, else ``StageError("onnxmodelanalyzer not
   found")``), its 4th line from the end the model's ops and its 2nd the unsupported ones; any
   unsupported op, or no op at all, is a ``StageError`` "You model contains ONNX operation(s) that
   are not supported by Groq Compiler: **OPS** ..." (the tool stands in on a stand-in node:
   tests/fakes/groqnode.py).
4. ``fp16_conversion`` (onnxflow ``ConvertOnnxToFp16.fire``): the expected input types become
   float16 / int32 (``downcast_applied``); the file itself is not converted.
5. ``compile`` (groqflow ``compile.Compile.fire``, ``CompileOnnx.fire``): the dependency check
   again, then ``analyze_onnx`` (input/output bytes, parameters counted over the ONNX
   initializers as ``onnx_helpers.parameter_count`` does) and ``analyze_parameters``
   (``build.calculate_num_chips``: one chip per 50M parameters rounded up to a power of 2,
   unless ``num_chips`` was given; more than the topology's maximum is a ``StageError``). The
   compiler is not run: its stats file says ``FAKE_TOTAL_CYCLES``.
6. ``assemble``: nothing to do; the build is successful and its state saved.

Each stage writes its stdout to ``log_<stage>.txt`` in the build directory, as ``Stage.fire_helper``
redirects it; a ``StageError`` restores stdout and is printed as an error (``Sequence.launch``),
any other exception leaves ``sys.stdout`` pointing at that stage's log, as in the real
``fire_helper`` (it has no ``except`` for them). ``Error`` subclasses print themselves on stderr.

The state is saved when the build starts and when a stage raises ``StageError``. A cached build
is checked as ``ignition._validate_cached_model`` (groqflow) and ``validate_cached_model``
(onnxflow) check it: an older onnxflow or GroqFlow (major or minor), a changed model hash
(``build.hash_model``: ``str(model)`` and the parameters' text), input shapes, input dtypes (as
after the FP16 conversion) or any ``groqit`` argument of the config; with none of these, a build
that failed or never finished under the same onnxflow. Each is one line of
``_rebuild_if_needed``'s warning, and the cache folder is wiped for a fresh build
(``_begin_fresh_build``); ``rebuild="never"`` loads the cached build anyway, with its warning, and
``rebuild="always"`` never looks. Only a successful cached build is returned ("found in cache.
Loading it!").
"""

import ast
import copy
import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np

import groqflow.common.build as build
import groqflow.common.sdk_helpers as sdk
import onnxflow.common.exceptions as exp
import onnxflow.common.printing as printing
from groqflow.groqmodel.groqmodel import FAKE_TOTAL_CYCLES, GroqModel, State

DEFAULT_ONNX_OPSET = 16  # groqflow/common/build.py
GROQFLOW_VERSION = "4.3.1"  # groqflow/version.py
ONNXFLOW_VERSION = "1.4.0"  # mlagility 3.3.1 src/onnxflow/version.py


def _validate_args(build_name, num_chips, topology, assembler_flags):
    # ignition._validate_args (the num_chips and assembler_flags checks)
    if num_chips is not None and num_chips > 1:
        supported = build.supported_topology(build.GROQCARD_A14, topology)
        if num_chips not in supported.keys():
            raise exp.ArgError(
                "\nYou set groqit()'s num_chips argument to {} with topology {}\nfor build {}, which is not a "
                "supported value. Choose from the\ncurrently supported chip counts: {}.\n".format(
                    num_chips, topology, build_name, supported.keys()))
    if assembler_flags and num_chips != 1:
        raise exp.ArgError("\nThe assembler_flags argument is incompatible with multi-chip models.\n"
                           "Either set num_chips=1 or do not use assembler_flags.\n")


def shapes_and_dtypes(inputs):
    """onnxflow ``build.get_shapes_and_dtypes``: by sorted input name."""
    shapes, dtypes = {}, {}
    for key in sorted(inputs):
        value = np.asarray(inputs[key])
        shapes[key] = value.shape
        dtypes[key] = value.dtype.name
    return shapes, dtypes


class Logger:
    """onnxflow ``build.Logger``: what a stage prints goes to its log file only (opened for each
    write here, so that a Logger left in sys.stdout holds no open file)."""

    def __init__(self, path):
        self.terminal = sys.stdout
        self.path = path
        open(path, "w", encoding="utf8").close()

    def write(self, message):
        with open(self.path, "a", encoding="utf8") as f:
            f.write(message)

    def flush(self):
        pass


def _fire(name, fire, state):
    sys.stdout = Logger(os.path.join(state.build_dir, "log_{}.txt".format(name)))
    try:
        fire(state)
    except exp.StageError as e:
        sys.stdout = sys.stdout.terminal
        state.build_status = "failed"
        state.save()
        printing.log_error(e)
        raise
    # any other exception leaves sys.stdout redirected, as the real fire_helper does
    sys.stdout = sys.stdout.terminal


def _export_pytorch(state):
    import onnx
    import torch

    if not isinstance(state.model, (torch.nn.Module, torch.jit.ScriptModule)):
        raise exp.StageError("\nThe current stage (ExportPytorchModel) is only compatible with\nmodels of type "
                             "torch.nn.Module or torch.jit.ScriptModule, however\nthe stage received a model of "
                             "type {}.\n".format(type(state.model)))
    all_args = list(inspect.signature(state.model.forward).parameters.keys())
    for name in state.inputs:
        if name not in all_args:
            raise ValueError("\nInput name {} not found in the model's forward method. Available\ninput names "
                             "are: {}\"\n".format(name, all_args))
    names = tuple(sorted(state.inputs, key=all_args.index))
    rest = copy.deepcopy(state.inputs)
    first = rest.pop(names[0])
    kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the real stage sends them to the stage's log
        torch.onnx.export(state.model, (first, rest), state.base_onnx_file, input_names=names,
                          do_constant_folding=True, opset_version=DEFAULT_ONNX_OPSET, verbose=False, **kwargs)
    state.expected_output_names = [o.name for o in onnx.load(state.base_onnx_file).graph.output]
    np.save(state.original_inputs_file,
            [{k: np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v) for k, v in state.inputs.items()}])
    onnx.checker.check_model(state.base_onnx_file)
    print("\tSuccess exporting model to ONNX")


def _optimize_onnx(state):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = state.opt_onnx_file
    onnxruntime.InferenceSession(state.base_onnx_file, options, providers=["CPUExecutionProvider"])
    print("\tSuccess optimizing ONNX model")


def check_ops(input_onnx):
    """groqflow ``onnx_helpers.check_ops`` with the SDK's tool (``use_sdk``)."""
    print("Checking unsupported ops...")
    cmd = sdk.find_tool("onnxmodelanalyzer") + ["-u", "-i", input_onnx]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, _ = p.communicate()
    out = out.decode("utf-8").split("\n")
    all_ops = ast.literal_eval(out[-4])
    unsupported_ops = ast.literal_eval(out[-2])
    print("\t\tDONE")
    print("\t{}/{} ops supported".format(len(all_ops) - len(unsupported_ops), len(all_ops)))
    if unsupported_ops:
        print("\tUnsupported ops: " + ", ".join(unsupported_ops))
    return all_ops, unsupported_ops


def _check_compatibility(state):
    sdk.check_dependencies(require_devtools=True, exception_type=exp.StageError)
    ops, unsupported = check_ops(state.opt_onnx_file)
    print("Model has {} unsupported ops".format(len(unsupported)))
    if unsupported or not ops:
        raise exp.StageError("""
            You model contains ONNX operation(s) that are not supported by Groq Compiler:
            **{}**
            Please replace these operation(s) in your model or contact
            sales@groq.com to request improved operation support in Groq Compiler.
            """.format(", ".join(unsupported)))


def _fp16_conversion(state):
    downcast = {"float32": "float16", "float64": "float16", "int64": "int32"}
    state.expected_input_dtypes = {k: downcast.get(v, v) for k, v in state.expected_input_dtypes.items()}
    state.downcast_applied = True
    print("\tSuccess converting ONNX model to fp16")


def _io_bytes(model):
    # onnx_helpers.io_bytes after the FP16 conversion: float outputs are 2 bytes, ints 4
    import onnx

    sizes = {onnx.TensorProto.FLOAT: 2, onnx.TensorProto.FLOAT16: 2, onnx.TensorProto.INT64: 4,
             onnx.TensorProto.INT32: 4, onnx.TensorProto.BOOL: 1}

    def total(nodes):
        return int(sum(np.prod([d.dim_value for d in n.type.tensor_type.shape.dim]) * sizes[n.type.tensor_type.elem_type]
                       for n in nodes))

    return total(model.graph.input), total(model.graph.output)


def _compile(state):
    import onnx

    sdk.check_dependencies(require_devtools=True, exception_type=exp.StageError)
    model = onnx.load(state.opt_onnx_file)
    state.info.compiled_model_input_bytes, state.info.compiled_model_output_bytes = _io_bytes(model)
    state.info.num_parameters = int(sum(np.prod(w.dims) for w in model.graph.initializer))
    if state.config["num_chips"] is None:
        state.num_chips_used = build.calculate_num_chips(state.info.num_parameters)
    else:
        state.num_chips_used = state.config["num_chips"]
    most = build.max_chips(build.GROQCARD_A14, state.config["topology"])
    if not state.num_chips_used <= most:
        raise exp.StageError(
            "\ngroqit() automatically decided that {} GroqChip\nprocessors are needed to build model \"{}.\nchips "
            "supported by groqit at this time ({}).\n\nHint: you can ask groqit to build with a specific number of "
            "chips\nless than {} by setting the num_chips argument in groqit().\n".format(
                state.num_chips_used, state.config["build_name"], most, most))
    with open(state.stats_file, "w") as f:
        json.dump({"total_cycles": FAKE_TOTAL_CYCLES}, f)
    print("Groq Compiler exited")


STAGES = (("export_pytorch", _export_pytorch), ("optimize_onnx", _optimize_onnx),
          ("check_compatibility", _check_compatibility), ("fp16_conversion", _fp16_conversion),
          ("compile", _compile), ("assemble", lambda state: None))


def hash_model(model):
    """onnxflow ``build.hash_model`` for a PyTorch model: its repr and its parameters' text."""
    params = {name: param.data for name, param in model.named_parameters()}
    return hashlib.sha256((str(model) + str(params)).encode()).hexdigest()


def unique_id():
    """onnxflow ``build.unique_id``: this process (its pid and start time)."""
    import psutil

    return hashlib.sha256("{}{}".format(os.getpid(), psutil.Process(os.getpid()).create_time()).encode()).hexdigest()


def _newer(current, previous):
    """"major" or "minor" when ``current`` is newer there (ignition.decode_version_number), else False."""
    now, then = [int(x) for x in current.split(".")[:2]], [int(x) for x in previous.split(".")[:2]]
    return "major" if now[0] > then[0] else "minor" if now[1] > then[1] else False


def validate_cached_model(config, state, model, inputs):
    """The reasons to rebuild a cached build, in the order of onnxflow's ``validate_cached_model``
    then groqflow's ``_validate_cached_model`` (its version check)."""
    result = _out_of_date("onnxflow", ONNXFLOW_VERSION, state.onnxflow_version, state.config["build_name"])
    model_changed = hasattr(model, "named_parameters") and state.model_hash != hash_model(model)
    shapes, dtypes = shapes_and_dtypes(inputs)
    downcast = {"float32": "float16", "int64": "int32"} if state.downcast_applied else {}
    shapes_changed = shapes != state.expected_input_shapes
    dtypes_changed = {k: downcast.get(v, v) for k, v in dtypes.items()} != state.expected_input_dtypes
    changed_args = [(key, config.get(key), state.config[key]) for key in state.config if config.get(key) !=
                    state.config[key]]
    if model_changed or shapes_changed or dtypes_changed or changed_args:
        if state.uid == unique_id() and state.build_status != "partial":
            result.append("You are building multiple different models in the same script without specifying a "
                          "unique build_model(..., build_name=) for each build.")
        name = config["build_name"]
        if model_changed:
            result.append('Model "{}" changed since the last time it was built.'.format(name))
        if shapes_changed:
            result.append('Input shape of model "{}" changed from {} to {} since the last time it was built.'.format(
                name, state.expected_input_shapes, shapes))
        if dtypes_changed:
            result.append('Input data type of model "{}" changed from {} to {} since the last time it was built.'
                          .format(name, state.expected_input_dtypes, dtypes))
        for key, current, previous in changed_args:
            result.append('build_model() argument "{}" for build {} changed from {} to {} since the last build.'
                          .format(key, name, previous, current))
    elif state.build_status in ("failed", "running") and ONNXFLOW_VERSION == state.onnxflow_version:
        result.append("build_model() has detected that you already attempted building this model with the exact "
                      "same model, inputs, options, and version of onnxflow, and that build failed.")
    return result + _out_of_date("GroqFlow", GROQFLOW_VERSION, state.groqflow_version, state.config["build_name"])


def _out_of_date(tool, now, then, build):
    """The rebuild reason when ``tool`` is a newer major or minor version than the build's (both checks say it
    in these words)."""
    level = _newer(now, then)
    return ["Your build {0} was previously built against {1} version {2}, however you are now using {1} version "
            "{3}. The previous build is incompatible with this version of {1}, as indicated by the {4} version number "
            "changing. See **docs/versioning.md** for details.".format(build, tool, then, now, level)] if level else []


def groqit(model=None, inputs=None, build_name=None, cache_dir=build.DEFAULT_CACHE_DIR, monitor=True,
           rebuild=None, compiler_flags=None, assembler_flags=None, num_chips=None, topology=build.TOPOLOGY,
           groqview=False, sequence=None, quantization_samples=None):
    build_name = build_name or os.path.splitext(os.path.basename(sys.argv[0]))[0] or "build"
    _validate_args(build_name, num_chips, topology, assembler_flags)
    config = {"build_name": build_name, "compiler_flags": list(compiler_flags or []),
              "assembler_flags": list(assembler_flags or []), "groqview": groqview, "num_chips": num_chips,
              "topology": topology}
    rebuild = rebuild or "if_needed"  # build.DEFAULT_REBUILD_POLICY
    shapes, dtypes = shapes_and_dtypes(inputs)
    cached = State.load(cache_dir, build_name) if rebuild != "always" else None
    if cached is not None:
        problems = "\n".join("- " + p for p in validate_cached_model(config, cached, model, inputs))
        if problems and rebuild == "never":
            printing.log_warning(
                "build_model() discovered a cached build of {}, and found that it is likely invalid for the following "
                "reasons: \n\n{} \n\nHowever, since you have set rebuild=\"never\", build_model() will attempt to "
                "load the build from cache anyways (with no guarantee of functionality or correctness). ".format(
                    build_name, problems))
        elif problems:
            printing.log_warning(
                "build_model() discovered a cached build of {}, but decided to rebuild for the following reasons: "
                "\n\n{} \n\nbuild_model() will now rebuild your model to ensure correctness. You can change this "
                "policy by setting the build_model(rebuild=...) argument.".format(build_name, problems))
            cached = None
        if cached is not None and cached.build_status == "successful":
            printing.log_success(' Build "{}" found in cache. Loading it!'.format(build_name))
            return GroqModel(cached, model)
    state = State(cache_dir, config, shapes, dtypes)
    state.model_hash = hash_model(model) if hasattr(model, "named_parameters") else None
    state.uid = unique_id()
    state.groqflow_version, state.onnxflow_version = GROQFLOW_VERSION, ONNXFLOW_VERSION
    shutil.rmtree(state.build_dir, ignore_errors=True)  # _begin_fresh_build: cache.rmdir
    for folder in ("onnx", "compile"):  # GroqState.prepare_file_system
        os.makedirs(os.path.join(state.build_dir, folder), exist_ok=True)
    state.model, state.inputs = model, inputs
    state.build_status = "running"  # saved now, so a build that dies is seen as failed next time
    state.save()
    if monitor:
        print('\n\n\nBuilding "{}"'.format(build_name))
    for name, fire in STAGES:
        _fire(name, fire, state)
    state.build_status = "successful"
    state.save()
    printing.log_success("\n    Saved to **{}**".format(state.build_dir))
    return GroqModel(state, model)
