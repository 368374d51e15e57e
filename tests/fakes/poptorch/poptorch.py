"""A stand-in for PopTorch (Graphcore's PyTorch for IPUs), written from PopTorch's own source and
never kinder than it: the part labkit uses, the MNIST exercise (labkit/testbeds/graphcore/ipu.py)
and the scaling study's IPU replicas (labkit/testbeds/comparison/replicas.py).

    poptorch = tests.fakes.import_poptorch(monkeypatch, system_ipus=16)   # or: put POPTORCH on sys.path

Real PopTorch cannot be installed here: it ships only inside Graphcore's Poplar SDK (its wheel
needs the SDK's ``poptorch_core`` and Poplar libraries), so labkit's IPU paths are verified only
against this fake off the testbed. Source read: github.com/graphcore/poptorch at tag
``sdk/poptorch/3.3.0`` (commit 77757b0; the messages below are the same in 3.0.0 and 3.4.0).
Each behaviour labkit depends on, and where the real one does it:

- Errors are ``poptorch.Error`` (``RecoverableError`` and ``UnrecoverableError`` subclass it),
  with ``.type``, ``.message`` and ``.location`` (python/poptorch.cpp,
  ``initialiseExceptionHandling``). Python-side ones read ``'poptorch_py_error': MESSAGE``
  (python/_impl.py, ``createPoptorchError``); C++ ones ``In FILE:LINE: 'poptorch_cpp_error':
  MESSAGE`` and, where a log context is open, ``Error raised in:`` and its frames
  (poptorch_err/source/ExceptionHandling.cpp, ``convertToPoptorchExceptionOrRethrow``). The
  fake's FILE:LINE is where the check sits in 3.3.0, and the real message can carry more
  context frames than the fake's one.
- ``Options`` (python/options.py, ``Options.__init__``; python/_options_impl.py,
  ``OptionsDict``): ``deviceIterations``, ``replicationFactor``, ``outputMode``, ``randomSeed``,
  ``autoRoundNumIPUs``, ``showCompilationProgressBar``, ``Training.gradientAccumulation``; a
  value of the wrong type fails ``OptionsDict.set``'s assertion. Once a ``DataLoader`` or a model
  used them they are frozen: any setter raises ``AttributeError("Can't modify frozen Options")``
  (``OptionsDict.checkIsFrozen``; frozen by ``DataLoader.__init__`` in python/__init__.py and by
  ``PoplarExecutor.__init__`` in python/_poplar_executor.py, which then works on a clone).
- ``OutputMode`` is an ``IntEnum``: Final=0, EveryN=1, All=2, Sum=3, Default=4
  (python/enums.py); Default becomes Final for a training model and All for an inference model
  (``PoplarExecutor.__init__``). Under All a call returns every micro-batch's outputs and
  losses, under Final the last device iteration's (every replica's), under Sum their sum.
- ``DataLoader(options, dataset, batch_size=1, shuffle=None, drop_last=True, ...)``: each item is
  a combined batch of batch_size x deviceIterations x (replicationFactor / input group size) x
  gradientAccumulation samples, drawn by torch's DataLoader with ``drop_last`` (python/__init__.py,
  ``DataLoader.__init__``). A dataset smaller than one combined batch yields no batch at all and
  no error, so a loop over it never calls, and never compiles, the model.
- ``trainingModel(model, options=None, optimizer=None)`` / ``inferenceModel(model,
  options=None)`` (python/__init__.py) only wrap: nothing is compiled or attached, and neither
  raises for the device. A model already wrapped by ``trainingModel`` raises RuntimeError; an
  inference model with gradient accumulation raises ``poptorch.Error`` there
  (``PoplarExecutor.__init__``). Without an optimizer a training model uses SGD, lr 0.01.
- Compilation, by ``compile(*args)`` or the first call (``PoplarExecutor._compile``,
  ``__call__``), creates the device and attaches to it (ConnectionType.Always, the default:
  popart_compiler/source/Compiler.cpp ``Compiler::initSession`` -> CompilerImpl.cpp
  ``CompilerImpl::createDevice``), in this order, each a ``poptorch.Error`` from the C++ side:
  more than 64 IPUs: "Too many IPUs requested (N). ..."; a number of IPUs (replicas x 1 IPU a
  replica here) that is not a power of 2, unless ``autoRoundNumIPUs(True)``: "The model
  specifies the use of N IPUs, however PopTorch must reserve a minimum of M ..."; too few free
  IPUs: "Failed to acquire N IPU(s)" followed by ``CompilerImpl::checkSystemConfig``'s line
  (no IPU in the system; no device of N IPUs; nothing when the IPUs exist but are taken).
  Only then does PopART compile, showing the tqdm bar "Graph compilation" on stderr
  (python/_options_impl.py, ``ProgressBar``). ``compile`` on a compiled model is ignored.
- A call checks its inputs against those compiled (python/_args_parser.py, ``validateInputs``)
  and the batch dimension against the combined batch (``PoplarExecutor._narrow_tensor``).
- ``detachFromDevice()`` on a model never compiled raises "Model has not been compiled or has
  been destroyed." (``NO_EXECUTABLE_ERR``); on a detached one "Device is not attached";
  ``attachToDevice()`` likewise before compilation, and on an attached model "Device is already
  attached"; it acquires the IPUs again, failing as compilation does; ``copyWeightsToHost()``
  before compilation raises ``NO_EXECUTABLE_ERR`` (all ``PoplarExecutor``). ``destroy()``
  releases the IPUs and is a no-op before compilation.
- ``Options.randomSeed(seed)`` also seeds the host's torch generator (python/options.py,
  ``Options.randomSeed`` calls ``torch.manual_seed``), so what torch draws after it (a shuffle, an
  initialisation) follows the seed.
- ``trainingModel`` / ``inferenceModel`` wrap a shallow copy of the model (``copy.copy``: its own
  ``training`` flag, the same submodules and parameters) and never call ``train()`` or ``eval()``:
  the graph is traced at compilation in whatever mode the model is then (their docstrings in
  python/__init__.py: "You may need to call model.train() / model.eval() on your model before you
  call this function"). An inference model runs under a PopART InferenceSession, where every
  dropout is an identity (popart ``willow/src/op/dropoutbase.cpp``,
  ``DropoutBaseOp::canBeReplacedByIdentity``); nothing else about the mode is changed.
- The weights live on the device from compilation on: the compiled model runs a copy of them, and
  the training model's optimizer steps that copy. The host model changes only when the weights
  are copied back: ``copyWeightsToHost()``, or implicitly, where PopTorch does it, when the
  training model detaches or is destroyed (``detachFromDevice``: "Read all the states back
  before detaching"; ``destroy``) and when the wrapped model's ``_parameters``, ``_buffers`` or
  ``forward`` is read (``PoptorchModel.__getattribute__``: the wrapped model's class is swapped
  for a subclass until ``destroy()``). An inference model keeps the weights it compiled with.
- ``ipuHardwareIsAvailable(num_ipus=1)``: whether the system has a device of that many IPUs
  (python/__init__.py; it does not check whether they are free).

The system: ``SYSTEM_IPUS`` IPUs (1, as a job under ``srun --ipus=1``; tests of replication set
16, an IPU-POD16), of which ``BUSY_IPUS`` are held by other processes. Compiled models hold
their IPUs until detached or destroyed, so an inference model compiled while the training model
still holds the only IPU fails to acquire it, as on a real IPU.

Not mirrored: the torch version PopTorch pins (the fake runs on the torch labkit's tests use),
tracing and PopART's own compile errors, ``POPTORCH_WAIT_FOR_IPU``, pipelining and sharding;
``PoptorchParameter``'s hook (a parameter tensor held apart from its model and read after a
training call shows the host's weights until they are copied back: stricter than PopTorch), an
inference model's re-copy of the weights of a training model it shares them with, and the IPU's
random generator (a dropout draws from torch's).
The model runs on the CPU with torch: a training call makes deviceIterations optimizer steps, in
each of which every replica takes its micro-batch and the replicas' gradients are averaged.

Every call is logged in ``CALLS`` as text (``"deviceIterations(10)"``,
``"DataLoader(batch_size=8, combined=80)"``, ``"trainingModel.compile"``) so tests can check
labkit drove PopTorch the documented way, in the documented order.
"""

import copy
import enum
import sys
import weakref

import torch

__version__ = "3.3.0+fake"
CALLS = []
#: IPUs in the system this process sees, and how many of them other processes hold.
SYSTEM_IPUS = 1
BUSY_IPUS = 0
_held = {}  # executor -> IPUs it holds
_wrapped = weakref.WeakSet()  # models wrapped by trainingModel

NO_EXECUTABLE_ERR = "Model has not been compiled or has been destroyed."
_COMPILER_IMPL = "poptorch/popart_compiler/source/CompilerImpl.cpp"


class Error(Exception):
    """poptorch.Error: ``str()`` is the long message; ``.message`` the message alone."""

    def __init__(self, long_message, type="", message="", location=""):
        super().__init__(long_message)
        self.type, self.message, self.location = type, message or long_message, location


class RecoverableError(Error):
    recovery_action = ""


class UnrecoverableError(Error):
    pass


def createPoptorchError(msg):
    return Error("'poptorch_py_error': " + msg, "poptorch_py_error", msg)


def _cpp_error(line, msg, context=None):
    """An error thrown by CompilerImpl.cpp's ERROR macros at ``line`` (3.3.0's), inside the log
    context ``context`` where one is open."""
    location = "  [0] {}\n".format(context) if context else ""
    long_message = "In {}:{}: 'poptorch_cpp_error': {}".format(_COMPILER_IMPL, line, msg)
    return Error(long_message + ("\nError raised in:\n" + location if location else ""), "poptorch_cpp_error", msg,
                 location)


class OutputMode(enum.IntEnum):
    Final = 0
    EveryN = 1
    All = 2
    Sum = 3
    Default = 4


class _OptionsDict:
    """Only declared options can be set, each with its default's type; none once frozen."""

    def __init__(self, **defaults):
        object.__setattr__(self, "_is_frozen", False)
        object.__setattr__(self, "_values", dict(defaults))

    def checkIsFrozen(self):
        if self._is_frozen:
            raise AttributeError("Can't modify frozen Options")

    def set(self, **kwargs):
        self.checkIsFrozen()
        for option, value in kwargs.items():
            assert option in self._values, "Invalid option %s, valid options are %s" % (option, self._values.keys())
            assert isinstance(value, type(self._values[option])), "Unexpected type %s for option %s. Expected %s" % (
                type(value), option, type(self._values[option]))
            self._values[option] = value

    def __getattr__(self, option):
        values = self.__dict__.get("_values", {})
        if option not in values:
            raise AttributeError("Invalid attribute {}.".format(option))
        return values[option]

    def __setattr__(self, option, value):
        self.checkIsFrozen()
        if option.startswith("_"):
            object.__setattr__(self, option, value)
        else:
            self.set(**{option: value})

    def _changeFreezeState(self, state):
        object.__setattr__(self, "_is_frozen", state)
        for value in self.__dict__.values():
            if isinstance(value, _OptionsDict):
                value._changeFreezeState(state)

    def _freeze(self):
        self._changeFreezeState(True)

    def __deepcopy__(self, memo):
        copied = type(self).__new__(type(self))
        for key, value in self.__dict__.items():
            object.__setattr__(copied, key, False if key == "_is_frozen" else copy.deepcopy(value, memo))
        return copied


class _TrainingOptions(_OptionsDict):
    def __init__(self):
        super().__init__(gradient_accumulation=1)

    def gradientAccumulation(self, gradient_accumulation):
        self.set(gradient_accumulation=gradient_accumulation)
        CALLS.append("Training.gradientAccumulation({})".format(gradient_accumulation))
        return self


class Options(_OptionsDict):
    def __init__(self):
        super().__init__(replication_factor=1, input_group_size=1, device_iterations=1, auto_round_num_ipus=False,
                         output_mode=OutputMode.Default.value, output_return_period=1)
        object.__setattr__(self, "_training", _TrainingOptions())
        object.__setattr__(self, "_show_compilation_progress_bar", True)
        CALLS.append("Options")

    @property
    def Training(self):
        return self._training

    def deviceIterations(self, device_iterations):
        self.set(device_iterations=device_iterations)
        CALLS.append("deviceIterations({})".format(device_iterations))
        return self

    def replicationFactor(self, replication_factor):
        self.set(replication_factor=replication_factor)
        CALLS.append("replicationFactor({})".format(replication_factor))
        return self

    def autoRoundNumIPUs(self, auto_round_num_ipus=True):
        self.set(auto_round_num_ipus=auto_round_num_ipus)
        return self

    def outputMode(self, output_mode, output_return_period=None):
        assert isinstance(output_mode, OutputMode)
        if output_mode == OutputMode.EveryN:
            assert output_return_period and output_return_period > 0, (
                "EveryN anchor must have output_return_period set to valid positive integer")
        self.set(output_mode=output_mode.value, output_return_period=output_return_period or 1)
        CALLS.append("outputMode({})".format(output_mode.name))
        return self

    def defaultOutputMode(self):
        return self.output_mode == OutputMode.Default

    def randomSeed(self, random_seed):
        # python/options.py, Options.randomSeed: the host's torch generator is seeded too
        assert isinstance(random_seed, int)
        self.checkIsFrozen()
        torch.manual_seed(random_seed)
        self._values["random_seed"] = random_seed
        CALLS.append("randomSeed({})".format(random_seed))
        return self

    def showCompilationProgressBar(self, show=True):
        self._show_compilation_progress_bar = show
        return self

    def clone(self):
        return copy.deepcopy(self)


def _num_batches_to_combine(options):
    return (options.device_iterations * (options.replication_factor // options.input_group_size)
            * options.Training.gradient_accumulation)


class DataLoader(torch.utils.data.DataLoader):
    def __init__(self, options, dataset, batch_size=1, shuffle=None, num_workers=0, drop_last=True, **kwargs):
        assert isinstance(options, Options)
        options._freeze()
        self._options = options
        self._combined_batch_size = batch_size * _num_batches_to_combine(options)
        CALLS.append("DataLoader(batch_size={}, combined={})".format(batch_size, self._combined_batch_size))
        super().__init__(dataset, batch_size=self._combined_batch_size, shuffle=bool(shuffle), num_workers=num_workers,
                         drop_last=drop_last, **kwargs)

    @property
    def combinedBatchSize(self):
        return self._combined_batch_size

    @property
    def options(self):
        return self._options


def ipuHardwareIsAvailable(num_ipus=1):
    return 0 < num_ipus <= SYSTEM_IPUS


def _round_up_num_ipus(num_ipus):
    rounded = 1
    while rounded < num_ipus:
        rounded *= 2
    return rounded


def _system_config(num_ipus):
    if SYSTEM_IPUS == 0:
        return "\nNo IPU detected in the system. \nFor more information use the Graphcore command-line tool `gc-monitor`."
    if num_ipus > SYSTEM_IPUS:
        return "\nNo device found on the system with {} IPUs: the configuration needs changing".format(num_ipus)
    return ""


def _show_compilation_bar():
    import tqdm

    bar = tqdm.tqdm(desc="Graph compilation", total=100, bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} "
                                                                     "[{elapsed}<{remaining}]", file=sys.stderr)
    for _ in range(4):
        bar.update(25)
    bar.close()


class PoplarExecutor:
    _kind = ""

    def __init__(self, model, options, training, optimizer=None, user_model=None):
        if options:
            if not isinstance(options, Options):
                raise createPoptorchError("Invalid type: 'options' is of type {} (Expected poptorch.Options)".format(
                    type(options)))
            options._freeze()
            options = options.clone()
        else:
            options = Options()
        if training:
            if options.defaultOutputMode():
                options.outputMode(OutputMode.Final)
        else:
            if options.defaultOutputMode():
                options.outputMode(OutputMode.All)
            if options.Training.gradient_accumulation != 1:
                raise createPoptorchError(
                    "You must set poptorch.Options().Training.gradientAccumulation to 1 or leave it as its default "
                    "value (1) when running a poptorch.inferenceModel().")
        options._freeze()
        self.model = model  # the shallow copy trainingModel / inferenceModel made: what gets traced
        self._user_model = user_model if user_model is not None else model
        self._device_model = None  # the traced graph and the weights on the IPU, from compilation on
        self._device_optimizer = None
        self._dirty_host_weights = False
        self._user_class = None
        if training:
            self._user_class = _hook_host_reads(self, self._user_model)
        self._options = options
        self._optimizer = optimizer
        self._training = training
        self._executable = None
        self._executable_inputs = None
        self._is_attached = False

    def _log(self, what):
        CALLS.append("{}.{}".format(self._kind, what))

    def isCompiled(self):
        return self._executable is not None

    def isAttachedToDevice(self):
        return self.isCompiled() and self._is_attached

    def _acquire(self, context):
        num_ipus = self._options.replication_factor  # one IPU a replica: no pipelining or sharding here
        if num_ipus > 64:
            raise _cpp_error(235, "Too many IPUs requested ({}). Experiments that need more than 64 IPUs require "
                                  "distributed execution.".format(num_ipus), context)
        rounded = _round_up_num_ipus(num_ipus)
        if rounded != num_ipus:
            if not self._options.auto_round_num_ipus:
                raise _cpp_error(707, "The model specifies the use of {} IPUs, however PopTorch must reserve a minimum "
                                      "of {} in order to allow the model to run, because PopTorch must reserve a power "
                                      "of 2 or maximum of 64 IPUs per process. Please reconfigure your model to use a "
                                      "different number of IPUs or set poptorch.Options().autoRoundNumIPUs(True)."
                                 .format(num_ipus, rounded), context)
            num_ipus = rounded
        free = SYSTEM_IPUS - BUSY_IPUS - sum(_held.values())
        if num_ipus > free:
            raise _cpp_error(725, "Failed to acquire {} IPU(s){}".format(num_ipus, _system_config(num_ipus)), context)
        _held[self] = num_ipus
        self._is_attached = True

    def _release(self):
        _held.pop(self, None)
        self._is_attached = False

    def _check_batch(self, args):
        combined = _num_batches_to_combine(self._options)
        for tensor in args:
            size = tensor.size()[0] if tensor.dim() else 1
            assert size % combined == 0, (
                "Invalid batch dimension: In the input %s, the batch dimension (%d) must be a multiple of "
                "Options.deviceIterations(%d) * (Options.replicationFactor(%d) / "
                "Options.inputReplicaGrouping.input_group_size(%d)) * Options.Training.gradientAccumulation(%d) = %d "
                "because it is used to calculate the batch size which will be executed on the device in any given "
                "iteration. For a full explanation see the batching semantics page of the documentation."
            ) % (tensor.shape, size, self._options.device_iterations, self._options.replication_factor,
                 self._options.input_group_size, self._options.Training.gradient_accumulation, combined)

    def _compile(self, args):
        self._check_batch(args)
        self._acquire("Compiler::initSession")
        if self._options._show_compilation_progress_bar:
            _show_compilation_bar()
        self._trace()
        self._executable = object()
        self._executable_inputs = [(a.dtype, a.shape) for a in args]

    def _trace(self):
        """The graph of the module as it is now, train() or eval() as its owner left it (PopTorch sets
        neither: trainingModel's and inferenceModel's docstrings in python/__init__.py tell the user to
        call it before wrapping), and the weights copied to the device (copyWeightsToDevice at compile).
        The device's copy is what runs from then on: the host model changes only by copyWeightsToHost."""
        self._device_model = copy.deepcopy(self.model)
        if not self._training:
            # a PopART InferenceSession replaces every dropout by an identity, whatever the trace's mode
            # (popart willow/src/op/dropoutbase.cpp, DropoutBaseOp::canBeReplacedByIdentity)
            for module in self._device_model.modules():
                if isinstance(module, torch.nn.modules.dropout._DropoutNd):
                    module.training = False
        if self._optimizer is not None:
            # the optimizer steps on the device's weights, with the host optimizer's groups and state
            name_of = {id(p): name for name, p in self.model.named_parameters()}
            device = dict(self._device_model.named_parameters())
            groups = [dict(group, params=[device[name_of[id(p)]] for p in group["params"]])
                      for group in self._optimizer.param_groups]
            self._device_optimizer = type(self._optimizer)(groups, **self._optimizer.defaults)
            self._device_optimizer.load_state_dict(self._optimizer.state_dict())

    def compile(self, *args):
        self._log("compile")
        if self.isCompiled():
            return  # PopTorch logs "Call to compile() ignored: the executable is already compiled"
        self._compile(args)

    def _validate(self, args):
        end = ("\nThis error occurred because the inputs passed at runtime don't match the inputs used to compile "
               "the model.\nTo recompile the model for the new inputs create a new inferenceModel / trainingModel "
               "wrapper or call destroy() on the curent one and try again.")
        if len(args) != len(self._executable_inputs):
            raise createPoptorchError("Number of positional arguments mismatch: expected {} arguments but got {}.{}"
                                      .format(len(self._executable_inputs), len(args), end))
        for i, (arg, (dtype, shape)) in enumerate(zip(args, self._executable_inputs)):
            name = "args[{}]".format(i)
            if arg.dtype != dtype:
                raise createPoptorchError("Data type mismatch for {}: expected {} but got {}.{}".format(
                    name, dtype, arg.dtype, end))
            if arg.shape != shape:
                raise createPoptorchError("Shape mismatch for {}: expected {} but got {}.{}".format(
                    name, shape, arg.shape, end))

    def __call__(self, *args):
        if not self.isCompiled():
            self._compile(args)
        if not self._is_attached:
            self.attachToDevice()
        self._validate(args)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # the IPU's work, on one CPU thread here: a busy machine's cores do not contend
        try:
            return self._run(*args)
        finally:
            torch.set_num_threads(threads)
            if self._training:
                self._dirty_host_weights = True

    def _outputs(self, per_iteration):
        """(outputs, losses) under the output mode, from each device iteration's (output, loss) per
        micro-batch: every micro-batch's (All), the last iteration's (Final), every Nth
        iteration's (EveryN) or their sum over the iterations (Sum)."""
        mode = OutputMode(self._options.output_mode)
        if mode == OutputMode.Final:
            per_iteration = per_iteration[-1:]
        elif mode == OutputMode.EveryN:
            period = self._options.output_return_period
            per_iteration = per_iteration[period - 1::period]
        outputs = [torch.cat([out for out, _ in parts]) for parts in per_iteration]
        losses = [torch.stack([loss for _, loss in parts]) for parts in per_iteration]
        if mode == OutputMode.Sum:
            return torch.stack(outputs).sum(0), torch.stack(losses).sum(0)
        return torch.cat(outputs), torch.cat(losses)

    def copyWeightsToHost(self):
        """The device's weights and buffers into the model given to the wrapper (python/_poplar_executor.py,
        copyWeightsToHost: ``poptorch_core.copyWeightsToHost_impl`` writes the host tensors in place)."""
        self._log("copyWeightsToHost")
        self._copy_to_host()

    def _copy_to_host(self):
        if not self.isCompiled():
            raise createPoptorchError(NO_EXECUTABLE_ERR)
        self._dirty_host_weights = False
        device = dict(self._device_model.named_parameters())
        device.update(self._device_model.named_buffers())
        with torch.no_grad():
            for name, tensor in list(self.model.named_parameters()) + list(self.model.named_buffers()):
                tensor.copy_(device[name])

    def copyWeightsToHostIfNeeded(self):
        """Whether the host's weights were behind the device's and have been copied."""
        if self._dirty_host_weights:
            self._copy_to_host()  # implicit: not logged in CALLS, which holds what the caller asked
            return True
        return False

    def detachFromDevice(self):
        self._log("detachFromDevice")
        if not self.isCompiled():
            raise createPoptorchError(NO_EXECUTABLE_ERR)
        if not self._is_attached:
            raise createPoptorchError("Device is not attached")
        if self._training:  # "Read all the states back before detaching"
            self.copyWeightsToHostIfNeeded()
        self._release()

    def attachToDevice(self):
        self._log("attachToDevice")
        if not self.isCompiled():
            raise createPoptorchError(NO_EXECUTABLE_ERR)
        if self._is_attached:
            raise createPoptorchError("Device is already attached")
        self._acquire(None)

    def destroy(self):
        self._log("destroy")
        if not self.isCompiled():
            return
        if self._training:
            self.copyWeightsToHostIfNeeded()
        self._release()
        self._executable = None
        self._device_model = None
        if self._training:
            self._user_model.__class__ = self._user_class  # _impl.unwrapModelIfNecessary
            _wrapped.discard(self._user_model)


def _hook_host_reads(executor, user_model):
    """Make reading the wrapped model's parameters, buffers or forward copy the device's weights to
    the host first, as PoptorchModel.__getattribute__ does (python/_poplar_executor.py,
    PoplarExecutor.__init__: the model's class is swapped for a subclass); the original class."""
    parent = weakref.ref(executor)
    original = type(user_model)

    class PoptorchModel(original):
        def __getattribute__(self, name):
            if name in ("_buffers", "_parameters", "forward"):
                p = parent()
                if p is not None:
                    p.copyWeightsToHostIfNeeded()
            return object.__getattribute__(self, name)

    PoptorchModel.__name__ = "Poptorch%s" % original.__name__
    user_model.__class__ = PoptorchModel
    return original


class _TrainingModel(PoplarExecutor):
    _kind = "trainingModel"

    def _run(self, data, labels):
        options = self._options
        iterations, replicas = options.device_iterations, options.replication_factor
        accumulation = options.Training.gradient_accumulation
        micro = data.shape[0] // (iterations * replicas * accumulation)
        per_iteration = []
        model, optimizer = self._device_model, self._device_optimizer
        for i in range(iterations):
            optimizer.zero_grad()
            parts = []
            for a in range(accumulation):
                for r in range(replicas):
                    lo = ((i * accumulation + a) * replicas + r) * micro
                    out, loss = model(data[lo:lo + micro], labels[lo:lo + micro])
                    (loss / (replicas * accumulation)).backward()  # the replicas' gradients are averaged
                    parts.append((out.detach(), loss.detach()))
            optimizer.step()
            per_iteration.append(parts)
        return self._outputs(per_iteration)


class _InferenceModel(PoplarExecutor):
    _kind = "inferenceModel"

    def _run(self, data):
        with torch.no_grad():
            return self._device_model(data)


def trainingModel(model, options=None, optimizer=None):
    CALLS.append("trainingModel")
    if isinstance(model, PoplarExecutor):
        model = model._user_model
    if model in _wrapped:
        raise RuntimeError("Model has already been wrapped in 'poptorch.trainingModel'. Call model.destroy() on the "
                           "model to unwrap before wrapping again.")
    if optimizer is None:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    _wrapped.add(model)
    # a shallow copy, as PopTorch makes: its own `training` flag, the same submodules and parameters
    return _TrainingModel(copy.copy(model), options, training=True, optimizer=optimizer, user_model=model)


def inferenceModel(model, options=None):
    CALLS.append("inferenceModel")
    if isinstance(model, PoplarExecutor):
        model = model._user_model
    return _InferenceModel(copy.copy(model), options, training=False, user_model=model)
