"""Fixtures for the Cerebras tests: the real CS-2 logs, and a fake Cerebras stack.

No Cerebras software can be installed here, so ``fake_stack`` builds what labkit looks for on
a Cerebras user node: an importable ``cerebras_pytorch`` package (empty: labkit only checks
that it is importable) and a modelzoo checkout whose BERT ``run.py`` is tests/fakes/cerebras_run.py, which
takes the modelzoo's flags and prints a log in the real format.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.cerebras.cs3_stack import CS3Node
from tests.fakes import CEREBRAS_RUN
from tests.shared import REPO, real_logs

# A params file with the structure of the course's configs/bert_large_MSL128_sampleds.yaml.
TEMPLATE = """\
train_input:
    data_processor: "BertCSVDataProcessor"
    data_dir: "/software/cerebras/dataset/bert_large/msl128/train"
    vocab_file: "/home/user/R_2.0.3/modelzoo/modelzoo/transformers/vocab/google_research_uncased_L-12_H-768_A-12.txt"
    max_sequence_length: 128
    max_predictions_per_seq: 20
    batch_size: 1024
    shuffle: True
    num_workers: 8
model:
    vocab_size: 30522
    hidden_size: 1024
    num_hidden_layers: 24
    num_heads: 16
    filter_size: 4096
    dropout_rate: 0.1
    max_position_embeddings: 512
optimizer:
    optimizer_type: "AdamW"
    weight_decay_rate: 0.01
    learning_rate: 0.0001
runconfig:
    max_steps: 1000
    log_steps: 100
    checkpoint_steps: 5000
    seed: 1
    save_initial_checkpoint: True
"""


LOGS = real_logs("cerebras")
STUDENT_LOGS = {
    512: LOGS / "student-xiaoruiDong-spring2024-bert-large-bs512.log",
    1024: LOGS / "student-kloiks-spring2024-bert-large-bs1024.log",
    2048: LOGS / "student-sarora39-spring2024-bert-large-bs2048.log",
}


@pytest.fixture
def cerebras_logs(testbed_logs) -> Path:
    """The real CS-2 logs (skips, naming LABKIT_SHARED, when ../shared is missing)."""
    return testbed_logs / "cerebras"


class FakeStack:
    def __init__(self, root: Path):
        self.root = root
        self.modelzoo = root / "R_2.0.3" / "modelzoo"
        self.bert_dir = self.modelzoo / "modelzoo" / "transformers" / "pytorch" / "bert"
        self.site = root / "site-packages"
        self.template = self.bert_dir / "configs" / "bert_large_MSL128_sampleds.yaml"

    def build(self) -> "FakeStack":
        (self.bert_dir / "configs").mkdir(parents=True)
        shutil.copy(str(CEREBRAS_RUN), str(self.bert_dir / "run.py"))
        self.template.write_text(TEMPLATE)
        package = self.site / "cerebras_pytorch"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text('"""Stand-in: labkit only checks that this imports."""\n__version__ = "2.0.3"\n')
        return self


@pytest.fixture
def fake_stack(tmp_path, monkeypatch) -> FakeStack:
    stack = FakeStack(tmp_path / "node").build()
    monkeypatch.syspath_prepend(str(stack.site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(stack.site), os.environ.get("PYTHONPATH", str(REPO))]))
    return stack


@pytest.fixture
def node(tmp_path, monkeypatch) -> CS3Node:
    """A stand-in CS-3 user node (tests/cerebras/cs3_stack.py), its variables set for the test."""
    built = CS3Node(tmp_path).build()
    for key, value in built.environ().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LABKIT_PROGRESS", "off")
    return built
