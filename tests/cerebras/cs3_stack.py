"""A stand-in CS-3 user node for the tests: a modelzoo checkout (2.10 unless told) with LLaMA's configs, the fake
``cszoo`` and ``csctl`` on PATH (tests/fakes/cszoo.py, csctl.py), and the cluster's state folder.

The course's own params file (/software/cerebras/dataset/params_llama2_7b.yaml) is not public;
:data:`PARAMS_2_6` is the modelzoo's params_llama2_7b.yaml (batch 1024, 4096-token model, AdamW,
a linear warm-up then cosine decay to 3e-4 / 3e-5) in the 2.6 "trainer" layout, with comments, an
anchor and the course's 50-step logging, so that an edit that loses any byte shows. Its data_dir is
the modelzoo's (relative to the LLaMA folder, where ``cszoo`` runs); the node has that folder, as
the real validation requires.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from tests.fakes import CSCTL, CSZOO

PARAMS_2_6 = """\
# LLaMa v2 model, 7B parameters, max_seq_length 4096
# Based on: https://arxiv.org/pdf/2307.09288.pdf
trainer:
  init:
    backend:
      backend_type: CSX
    model:
      name: llama
      vocab_size: 32000
      hidden_size: 4096
      position_embedding_type: rotary
      rotary_dim: 128
      max_position_embeddings: 4096
      num_hidden_layers: 32
      num_heads: 32
      filter_size: 11008
      nonlinearity: swiglu
      loss_scaling: num_tokens
    optimizer:
      AdamW:
        betas: [0.9, 0.95]
        eps: 1.0e-05
        weight_decay: 0.1
    schedulers:
    - SequentialLR:
        schedulers:
        - LinearLR:
            initial_learning_rate: 0.0
            end_learning_rate: 3.0e-4    # peak
            total_iters: 2000
        - CosineDecayLR:
            initial_learning_rate: 3.0e-4
            end_learning_rate: 3.0e-5
            total_iters: 474837
    precision:
      enabled: true
      fp16_type: cbfloat16
      loss_scaling_factor: dynamic
      max_gradient_norm: 1.0
    loop:
      max_steps: 200          # the course's short run (2T tokens would take 476837)
    checkpoint:
      steps: 200
    logging:
      log_steps: 50
    seed: 1
  fit:
    train_dataloader: &train
      data_processor: GptHDF5MapDataProcessor
      data_dir: ./shuffled/llama_v2_data_test/val
      batch_size: 1024
      shuffle: false
      num_workers: 8
# validation is commented out in the course's file to shorten the run
#    val_dataloader:
#      batch_size: 1024
"""


BERT_2_10 = """\
# the trainer layout of the modelzoo's models/nlp/bert/configs (Release 2.10.0), shortened
trainer:
  init:
    backend:
      backend_type: CSX
    model:
      name: bert
      vocab_size: 30522
      hidden_size: 1024
      num_hidden_layers: 24
      num_heads: 16
      filter_size: 4096
    optimizer:
      AdamW:
        weight_decay: 0.01
    schedulers:
    - LinearLR:
        initial_learning_rate: 0.0001
        end_learning_rate: 0.0
        total_iters: 1000
    loop:
      max_steps: 1000
      eval_steps: 3
    checkpoint:
      steps: 1000
    logging:
      log_steps: 100
    seed: 1
  fit:
    train_dataloader:
      data_processor: BertCSVDataProcessor
      data_dir: ./bert_data/train
      batch_size: 1024
    val_dataloader:
      data_processor: BertCSVDataProcessor
      data_dir: ./bert_data/train
      batch_size: 1024
"""


class CS3Node:
    """Paths of the stand-in node; :meth:`build` makes them and :meth:`environ` the variables it needs."""

    def __init__(self, root: Path, release: str = "2.10.0") -> None:
        self.root = root
        self.release = release
        self.modelzoo = root / "R_{}".format(release) / "modelzoo"
        self.llama = self.modelzoo / "src" / "cerebras" / "modelzoo" / "models" / "nlp" / "llama"
        self.params = self.llama / "configs" / "params_llama2_7b.yaml"
        self.bin = root / "bin"
        self.state = root / "cluster"
        self.work = root / "work"
        self.data = self.llama / "shuffled" / "llama_v2_data_test" / "val"  # the data_dir, relative to cszoo's cwd

    def build(self, params: str = PARAMS_2_6) -> "CS3Node":
        self.params.parent.mkdir(parents=True)
        self.params.write_text(params)
        # the modelzoo's setup.py names its release (`__version__ = "2.10.0"` in main())
        (self.modelzoo / "setup.py").write_text('def main():\n    __version__ = "{}"\n'.format(self.release))
        for folder in (self.bin, self.state, self.work, self.data):
            folder.mkdir(parents=True)
        for name, script in (("cszoo", CSZOO), ("csctl", CSCTL)):
            path = self.bin / name
            path.write_text('#!/bin/sh\nexec "{}" "{}" "$@"\n'.format(sys.executable, script))
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return self

    def environ(self) -> dict:
        return {"PATH": str(self.bin) + os.pathsep + os.environ.get("PATH", ""), "FAKE_CSZOO_STATE": str(self.state),
                "LABKIT_MODELZOO": str(self.modelzoo)}

    def cancelled(self) -> list:
        path = self.state / "cancelled.log"
        return path.read_text().split() if path.exists() else []
