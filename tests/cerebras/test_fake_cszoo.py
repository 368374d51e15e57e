"""The fake ``cszoo`` (tests/fakes/cszoo.py) does what the real modelzoo 2.6/2.10 does where labkit meets it.

Each behaviour is the real one, read from the modelzoo's source and, where it runs without a CS-3,
seen on the real modelzoo 2.10 with the CPU backend (docs/cerebras.md): the messages asserted here
are the ones the real ``cszoo config validate`` printed for the same mistakes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from labkit.testbeds.cerebras.llama2_7b import cszoo
from labkit.testbeds.cerebras.llama2_7b.cszoo import run_on_cs3
from labkit.testbeds.cerebras.llama2_7b.metrics import read_log
from tests.cerebras.cs3_stack import BERT_2_10, PARAMS_2_6
from tests.cerebras.test_cs3 import _config
from tests.fakes import CSZOO
from tests.fakes.cszoo import format_rate

# The modelzoo's own params_llama2_7b.yaml validates after the fit and has a `validate` section.
WITH_VALIDATION = PARAMS_2_6.replace("      max_steps: 200 ", "      eval_steps: 3\n      max_steps: 200 ") + """\
    val_dataloader:
      data_processor: GptHDF5MapDataProcessor
      data_dir: ./shuffled/llama_v2_data_test/val
      batch_size: 64
  validate:
    val_dataloader:
      data_processor: GptHDF5MapDataProcessor
      data_dir: ./shuffled/llama_v2_data_test/val
      batch_size: 64
"""


def _cszoo(node, *argv):
    return subprocess.run([sys.executable, str(CSZOO)] + list(argv), capture_output=True, text=True,
                          cwd=str(node.llama), env=dict(os.environ))


def test_target_device_is_taken_and_only_a_cs3_is_simulated(node):
    done = _cszoo(node, "fit", str(node.params), "--target_device", "CSX")
    assert done.returncode == 0 and "| Train Device=CSX, Step=200," in done.stdout, done.stderr
    done = _cszoo(node, "fit", str(node.params), "--target_device", "CPU")
    assert done.returncode == 2 and "only a CS-3 (CSX) is simulated; this run asks for CPU" in done.stderr


def test_a_job_label_without_one_equal_sign_is_the_cluster_configs_valueerror(node):
    done = _cszoo(node, "fit", str(node.params), "--job_labels", "x")
    assert done.returncode == 1 and "Wafer" not in done.stdout
    assert done.stderr.rstrip().endswith("ValueError: 'x' is an invalid label. Expecting the label key and the label "
                                         "value to be separated by a single equal sign(=) character.")


def test_config_validate_passes_what_labkit_writes_and_rejects_what_the_real_validation_rejects(node, tmp_path):
    written = node.llama / "configs" / "mine.yaml"
    cszoo.write_params_yaml(str(node.params), str(written), batch_size=256, steps=20, learning_rate=1e-4)
    done = _cszoo(node, "config", "validate", str(written))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    cases = [
        # fp16_type belongs to trainer.init.precision, not to the model
        (PARAMS_2_6.replace("      loss_scaling: num_tokens\n", "      loss_scaling: num_tokens\n      fp16_type: cbfloat16\n"),
         "0.init.model.config.fp16_type\n  Extra inputs are not permitted [type=extra_forbidden, "
         "input_value='cbfloat16', input_type=str]", "1 validation error"),
        (PARAMS_2_6.replace("batch_size: 1024", "batch_size: 0"),
         "0.fit.train_dataloader.GptHDF5MapDataProcessor.config.batch_size\n  Input should be greater than 0 "
         "[type=greater_than, input_value=0, input_type=int]", "1 validation error"),
        (PARAMS_2_6.replace("./shuffled/llama_v2_data_test/val", "./nowhere"),
         "0.fit.train_dataloader.GptHDF5MapDataProcessor.config.data_dir.function-before[validate_path(), str]\n"
         "  Value error, Path ./nowhere does not exist.", "2 validation errors"),  # the real one lists the path twice
    ]
    for text, expected, count in cases:
        written.write_text(text)
        done = _cszoo(node, "config", "validate", str(written))
        assert done.returncode == 1 and expected in done.stderr, done.stderr
        assert "ValidationError: {} for function-before[unpack_trainer(), tuple[TrainerConfig]]".format(count) \
            in done.stderr
    written.write_text("runconfig_only: 1\n")
    done = _cszoo(node, "fit", str(written))
    assert done.returncode == 1 and done.stderr.rstrip().endswith(
        "KeyError: \"Trainer configuration not found in params. Please ensure that the params contain a 'trainer' key.\"")


def test_validate_is_an_eval_only_run(node):
    node.params.write_text(WITH_VALIDATION)
    done = _cszoo(node, "validate", str(node.params))
    assert done.returncode == 0, done.stderr
    assert "Train Device" not in done.stdout and "Processed" not in done.stdout
    assert "| Eval Device=CSX, GlobalStep=0, Batch=3, Loss=" in done.stdout
    assert done.stdout.rstrip().endswith("Evaluation completed successfully!")


def test_fit_validates_at_its_end_and_labkit_reads_the_run(node):
    node.params.write_text(WITH_VALIDATION)
    run = run_on_cs3(_config(), workdir=str(node.work), echo=lambda line: None)
    log = Path(run.environment["log_path"]).read_text().splitlines()
    train = [line for line in log if "| Train Device=" in line]
    # the eval still to come has no measured duration: the time left is a lower bound
    assert train and all("TimeRemaining>" in line for line in train)
    assert [i for i, line in enumerate(log) if "Eval Device=CSX, GlobalStep=20, Batch=3" in line]
    assert log[-1].endswith("Processed 5120 training sample(s) in {} seconds.".format(round(20 * (0.5 + 256 / 32.5)
                                                                                             + 900.0, 9)))
    assert run.status == "complete" and run.metrics["steps"] == 20 and run.metrics["samples"] == 20 * 256
    assert run.metrics["global_rate"] == round(256 / (0.5 + 256 / 32.5), 2)


def test_rates_below_one_sample_per_second_print_three_significant_digits():
    assert format_rate(0.0523456) == "0.0523 samples/sec" and format_rate(0.5) == "0.5 samples/sec"
    assert format_rate(31.966) == "31.97 samples/sec" and format_rate(1.0) == "1.00 samples/sec"


def test_importing_the_fake_leaves_the_test_processs_sys_path_alone():
    # With the fakes' folder on sys.path, its groqflow/ folder imports as an empty namespace
    # package: every later Groq test in the same pytest process then fails to find groqflow.common.
    from tests.fakes import HERE

    assert format_rate(0.5)  # the module is imported (at the top of this file)
    assert str(HERE) not in sys.path and str(CSZOO.parent) not in sys.path


def _train_lines(text):
    return [line for line in text.splitlines() if "| Train Device=" in line]


def test_a_failed_fit_still_prints_the_processed_line_before_its_traceback(node, monkeypatch):
    # trainer.py on_exception("fit") -> progress.py on_fit_exception -> on_fit_end: the samples of the steps done
    monkeypatch.setenv("FAKE_CSZOO_FAIL_AFTER", "100")
    done = _cszoo(node, "fit", str(node.params))
    lines = done.stdout.splitlines()
    processed = [i for i, line in enumerate(lines) if "Processed 102400 training sample(s) in" in line]
    assert done.returncode == 1 and processed, done.stdout[-2000:]
    assert lines[processed[0] - 1].split("INFO:")[-1].strip().startswith("| Train Device=CSX, Step=100,")
    assert lines[processed[0] + 1] == "Traceback (most recent call last):"
    # labkit still calls the run failed: the Processed line is no sign of a finished fit
    run = run_on_cs3(_config(steps=200, batch_size=1024), workdir=str(node.work), echo=lambda line: None)
    assert run.status == "failed" and run.metrics["steps"] == 100
    read = read_log(run.environment["log_path"])  # the log alone, as log_path reads it
    assert read.status == "failed" and read.metrics["samples"] == 102400


def test_the_time_left_is_a_lower_bound_until_the_first_checkpoint_is_timed(node):
    # profiler.py time_remaining: a checkpoint schedule and no checkpoint duration yet add "checkpoint" to the
    # stages missing a duration, printed `>` (progress.py format_time_remaining)
    node.params.write_text(PARAMS_2_6.replace("      steps: 200", "      steps: 100"))
    done = _cszoo(node, "fit", str(node.params))
    bounds = [line.split("TimeRemaining")[-1][0] for line in _train_lines(done.stdout)]
    assert done.returncode == 0 and bounds == [">", ">", "=", "="], done.stdout[-2000:]
    assert "Saving checkpoint at step 100" in done.stdout and "Saving checkpoint at step 200" in done.stdout


def test_without_checkpoint_steps_no_checkpoint_is_saved_and_the_time_left_is_exact(node):
    # checkpoint.py on_train_batch_end saves only `if self.steps`; run_schedule.py sets no checkpoint_schedule
    node.params.write_text(PARAMS_2_6.replace("    checkpoint:\n      steps: 200\n", ""))
    model_dir = node.work / "md"
    done = _cszoo(node, "fit", str(node.params), "--model_dir", str(model_dir))
    assert done.returncode == 0 and "Saving checkpoint" not in done.stdout, done.stderr
    assert all("TimeRemaining=" in line for line in _train_lines(done.stdout))
    assert not list(model_dir.glob("*.mdl"))


def test_a_restart_from_a_checkpoint_trains_from_its_step(node):
    model_dir = node.work / "md"
    first = _cszoo(node, "fit", str(node.params), "--model_dir", str(model_dir))
    assert first.returncode == 0 and (model_dir / "checkpoint_200.mdl").exists()
    node.params.write_text(PARAMS_2_6.replace("max_steps: 200 ", "max_steps: 300 "))
    again = _cszoo(node, "fit", str(node.params), "--model_dir", str(model_dir), "--num_csx=2",
                   "--checkpoint_path={}".format(model_dir / "checkpoint_200.mdl"))
    steps = [line.split("Step=")[1].split(",")[0] for line in _train_lines(again.stdout)]
    assert again.returncode == 0 and steps == ["250", "300"], again.stdout[-2000:]
    assert "Preparing to execute using 2 CSX" in again.stdout and "Processed 102400 training sample(s)" in again.stdout
    missing = _cszoo(node, "fit", str(node.params), "--checkpoint_path", str(model_dir / "checkpoint_9.mdl"))
    assert missing.returncode == 1 and "checkpoint_9.mdl does not exist" in missing.stderr


def test_a_client_of_another_release_is_refused_with_the_appliances_words(node, monkeypatch):
    monkeypatch.setenv("FAKE_CSZOO_CLIENT_RELEASE", "2.6.0")
    done = _cszoo(node, "fit", str(node.params))
    assert done.returncode == 1 and "Wafer" not in done.stdout
    assert ("cerebras.appliance.errors.ApplianceVersionError: CLUSTER_SERVER has version: 2.10.0 but client has "
            "2.6.0.\nIn order to use this cluster, you must install 2.10.0 of the client.") in done.stderr




def test_bert_large_at_2_10_fits_with_its_eval_metrics(node):
    (node.llama / "bert_data" / "train").mkdir(parents=True)
    node.params.write_text(BERT_2_10)
    done = _cszoo(node, "fit", str(node.params), "--job_labels", "name=bert_pt")
    assert done.returncode == 0, done.stderr
    assert "| Train Device=CSX, Step=1000," in done.stdout
    assert "eval/accuracy_masked_lm" in done.stdout and "eval/mlm_perplexity" in done.stdout
    assert done.stdout.rstrip().endswith("Processed 1024000 training sample(s) in {} seconds.".format(
        round(1000 * (0.5 + 1024 / 32.5) + 900.0, 9)))
