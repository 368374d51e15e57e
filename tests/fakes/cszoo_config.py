"""The fake ``cszoo``'s config validation: the checks of the modelzoo's pydantic trainer config that
a params file labkit writes can meet, with the real messages.

Written from Cerebras/modelzoo Release 2.10 (the same code as 2.6 in these files) and checked
against its real output (cerebras-pytorch 2.10, docs/cerebras.md):

- trainer/validate.py ``validate_trainer_params``: a file without ``trainer`` raises
  ``KeyError("Trainer configuration not found in params. Please ensure that the params contain a
  'trainer' key.")``; every other problem is one ``pydantic_core.ValidationError`` titled ``N
  validation error(s) for function-before[unpack_trainer(), tuple[TrainerConfig]]``, one entry per
  problem: its location (``0.<section>...``), then ``  <message> [type=..., input_value=...,
  input_type=...]`` and pydantic's ``For further information`` line.
- Locations and messages, as the real validation printed them:
  ``0.fit.train_dataloader.GptHDF5MapDataProcessor.config.batch_size`` (an integer, more than 0:
  ``int_parsing``, ``int_from_float``, ``greater_than``); ``0.init.seed`` (an integer); each
  ``data_dir`` must exist (data/common/HDF5DataProcessor.py ``validate_path``: two entries per path,
  ``Path X does not exist.`` and ``Input should be a valid list``); a key the section does not
  define is ``Extra inputs are not permitted`` (``extra_forbidden``) in ``init.model`` (LLaMA:
  models/nlp/llama/model.py ``LlamaModelConfig``, :data:`LLAMA_FIELDS`), ``init.loop``
  (trainer/callbacks/loop.py ``TrainingLoop``), ``init.logging`` (callbacks/logging.py) and
  ``init.checkpoint`` (callbacks/checkpoint.py); a scheduler's ``*learning_rate`` must be a number
  (``float_parsing``).
- trainer/utils.py ``run_trainer``: ``fit`` without a ``fit`` section and ``validate`` without a
  ``validate`` section raise ``RuntimeError`` ("Fit requested but config is missing `fit` section.
  ...").

A legacy file (``runconfig`` layout, converted by ``convert_legacy_params_to_trainer_params``) is
not converted here: only the trainer layout is checked. Everything the real validation checks
beyond this list (every other model and optimizer field) is not checked: labkit does not write it.
"""

import os

__all__ = ["LLAMA_FIELDS", "config_problems", "format_validation_error", "missing_section"]

TITLE = "function-before[unpack_trainer(), tuple[TrainerConfig]]"

#: ``LlamaModelConfig.model_fields`` of Release 2.10 (its ``model_config`` has ``extra="forbid"``).
LLAMA_FIELDS = frozenset("""
alibi_trainable_slopes attention_chunk_size attention_dropout_rate attention_inner_dim attention_kernel
attention_logit_softcapping attention_logits_alpha attention_module attention_qk_norm_eps attention_qk_norm_layer
attention_sink_tokens attention_sliding_window_length attention_softmax_fp32 attention_type
attention_vertical_column_spacing attention_vertical_column_width boundary_casting compute_eval_metrics
constant_pos_embedding cross_attention_layers dropout_rate dtype embd_pdrop embedding_initializer embedding_layer_norm
embeddings_scale extra_attention_params extra_ffn_params ffn_initializer ffn_output_layer_initializer filter_size
final_logit_softcapping fixed_sparse_attention fold_rope_consts hidden_size initializer initializer_range
layer_norm_epsilon loop_dim loss_scaling loss_weight lr_adjustment_groups max_position_embeddings max_tokens
memory_tokens_config moe_params mup_base_filter_size mup_base_hidden_size name nonlinearity norm_first_sandwich
norm_type num_extra_input_vocab_tokens num_heads num_hidden_layers num_relative_attention_buckets
output_layer_initializer output_logits_alpha output_logits_scale pos_scaling_extra_args pos_scaling_factor
pos_scaling_type position_embedding_offset position_embedding_type rel_distance_extra_args rel_distance_mode
rope_theta rotary_dim scale_output_logits_by_d scale_qk_dot_by_d scale_qk_dot_by_layer_idx share_embedding_weights
sliding_window_every_other_decoder_layer sliding_window_every_other_decoder_layer_pattern start_token stop_sequences
temperature top_k top_p use_bias_in_output use_experimental_flex_api use_ffn_bias use_ffn_bias_in_attention
use_projection_bias_in_attention use_sink_token vocab_size
""".split())

_SECTION_FIELDS = {
    "loop": frozenset("eval_frequency eval_steps grad_accum_steps max_steps num_epochs num_steps "
                      "steps_per_epoch".split()),
    "logging": frozenset("enable_act_frequency log_level log_steps wsc_log_level".split()),
    "checkpoint": frozenset("autoload_last_checkpoint checkpoint_name checkpoint_root disable_strict_checkpoint_loading "
                            "save_initial_checkpoint steps strict_version".split()),
}


def _entry(loc, message, kind, value):
    return (loc, "{} [type={}, input_value={!r}, input_type={}]".format(message, kind, value, type(value).__name__),
            kind)


def _integer(loc, value, positive=False):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return [_entry(loc, "Input should be a valid integer", "int_type", value)]
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            return [_entry(loc, "Input should be a valid integer, unable to parse string as an integer",
                           "int_parsing", value)]
    if isinstance(value, float) and value != int(value):
        return [_entry(loc, "Input should be a valid integer, got a number with a fractional part",
                       "int_from_float", value)]
    if positive and value <= 0:
        return [_entry(loc, "Input should be greater than 0", "greater_than", value)]
    return []


def _loaders(trainer):
    """(location, data processor settings) of every dataloader in the file."""
    found = []
    fit = trainer.get("fit") or {}
    if isinstance(fit.get("train_dataloader"), dict):
        found.append(("0.fit.train_dataloader", fit["train_dataloader"]))
    for section, key in (("fit", "val_dataloader"), ("validate", "val_dataloader"),
                         ("validate_all", "val_dataloaders")):
        value = (trainer.get(section) or {}).get(key)
        if isinstance(value, dict):
            found.append(("0.{}.{}{}".format(section, key, ".0" if section != "validate" else ""), value))
        elif isinstance(value, list):
            found.extend(("0.{}.{}.{}".format(section, key, i), v) for i, v in enumerate(value) if isinstance(v, dict))
    return found


def _data_dir_problems(loc, loader):
    where = "{}.{}.config.data_dir".format(loc, loader.get("data_processor"))
    paths = loader.get("data_dir")
    problems = []
    for path in paths if isinstance(paths, list) else [paths]:
        if not isinstance(path, str):
            continue
        if not os.path.exists(path):  # relative to the working directory, as the real check reads it
            problems.append(_entry(where + ".function-before[validate_path(), str]",
                                   "Value error, Path {} does not exist.".format(path), "value_error", path))
            problems.append(_entry(where + ".list[function-before[validate_path(), str]]",
                                   "Input should be a valid list", "list_type", path))
    return problems


def _learning_rates(node, loc):
    problems = []
    if isinstance(node, dict):
        for key, value in node.items():
            here = "{}.{}".format(loc, key.lower() if key[:1].isupper() else key)
            if key.endswith("learning_rate") and not isinstance(value, (dict, list)):
                if isinstance(value, str):
                    try:
                        float(value)
                    except ValueError:
                        problems.append(_entry(here, "Input should be a valid number, unable to parse string as a "
                                                     "number", "float_parsing", value))
            else:
                problems.extend(_learning_rates(value, here))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            problems.extend(_learning_rates(value, "{}.{}".format(loc, i)))
    return problems


def config_problems(params):
    """The validation errors of ``params`` as (location, message line, type), in the real order of sections.

    Raises KeyError as the real validation does for a file without ``trainer``.
    """
    if "trainer" not in params:
        if "runconfig" in params:
            return []
        raise KeyError("Trainer configuration not found in params. Please ensure that the params contain a "
                       "'trainer' key.")
    trainer = params["trainer"] or {}
    init = trainer.get("init") or {}
    problems = []
    model = init.get("model") or {}
    if model.get("name") == "llama":
        problems.extend(_entry("0.init.model.config." + key, "Extra inputs are not permitted", "extra_forbidden",
                               model[key]) for key in model if key not in LLAMA_FIELDS)
    if "seed" in init:
        problems.extend(_integer("0.init.seed", init["seed"]))
    for section, fields in _SECTION_FIELDS.items():
        values = init.get(section) or {}
        problems.extend(_entry("0.init.{}.{}".format(section, key), "Extra inputs are not permitted", "extra_forbidden",
                               values[key]) for key in values if key not in fields)
    problems.extend(_learning_rates(init.get("schedulers"), "0.init.schedulers"))
    for loc, loader in _loaders(trainer):
        if "batch_size" in loader:
            problems.extend(_integer("{}.{}.config.batch_size".format(loc, loader.get("data_processor")),
                                     loader["batch_size"], positive=True))
        problems.extend(_data_dir_problems(loc, loader))
    return problems


def format_validation_error(problems):
    """The lines pydantic prints for a ValidationError with these problems."""
    lines = ["pydantic_core._pydantic_core.ValidationError: {} validation error{} for {}".format(
        len(problems), "" if len(problems) == 1 else "s", TITLE)]
    for loc, message, kind in problems:
        lines += [loc, "  " + message, "    For further information visit https://errors.pydantic.dev/2.8/v/" + kind]
    return "\n".join(lines)


def missing_section(params, mode):
    """trainer/utils.py ``run_trainer``: the RuntimeError message when the mode's section is missing, else None."""
    trainer = params.get("trainer") or {}
    if mode in ("train", "train_and_eval") and not trainer.get("fit"):
        return ("Fit requested but config is missing `fit` section. Please add a `fit` section to your trainer "
                "configuration.")
    if mode == "eval" and not trainer.get("validate"):
        return ("Validation requested but config is missing `validate` section. Please add a `validate` section to "
                "your trainer configuration.")
    if mode == "eval_all" and not trainer.get("validate_all"):
        return ("Validation requested but config is missing `validate_all` section. Please add a `validate_all` "
                "section to your trainer configuration.")
    return None
