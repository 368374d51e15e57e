"""The Groq exercise: BERT-tiny on SST-2 (spring) or MiniLM on STS-B (autumn), compiled for an
inference engine and compared with the CPU. Notebook: notebooks/groq/bert_tiny.ipynb.

    papermill notebooks/groq/bert_tiny.ipynb out.ipynb -p num_samples 100
    papermill notebooks/groq/bert_tiny.ipynb out.ipynb -p model sentence-transformers/all-MiniLM-L6-v2
    papermill notebooks/groq/bert_tiny.ipynb out.ipynb -p max_seq_length 256 -y 'custom_text: ["What a film!"]'

In Python (the notebook's five steps)::

    from labkit.testbeds import groq
    config = groq.SPEC.validate({"num_samples": 50})
    groq.plan(config)                  # the backends that will run, and why
    run = groq.run_exercise(config)    # load model and data, build, evaluate: a labkit.results.Run
    groq.show(run)                     # GroqFlow's columns: Source, Accuracy, end-to-end and on-chip latency / IPS

The steps one by one: ``loaded = groq.load_model(config); data = groq.load_data(config, loaded);
engines = groq.build(config, loaded); result = groq.evaluate(config, loaded, data, engines)``.

The ``cpu`` row is measured as the proof point measures it (PyTorch eager, batch 1, the dataset
loop's wall time divided by the number of samples); ``onnxruntime`` runs a fixed-shape
``torch.onnx`` export; ``cuda`` appears with a GPU; ``groq`` with GroqFlow and a GroqChip
(never run on a GroqNode: checked against the real GroqFlow up to its SDK check, past it against
a fake; docs/groq.md says which path was checked where).

Modules, one concern each: ``spec`` (parameters and checks: ``SPEC``), ``metrics`` (``METRICS``),
``exercise`` (the notebook's plan and run steps), ``report`` (its show step, the latency and parity
sections, the run record, GroqFlow's table from logs), ``steps`` (load model and data, build,
evaluate), ``result`` (GroqResult and its tables, GroqDetails), ``custom_text`` (the student's own
sentences, the fixed-shape lesson), ``models`` (hub, local or offline model), ``evalsets``
(evaluation sets, tokenization, scores), ``backends`` (which run here; ``engine``: eager CPU and
CUDA, ``onnx_engine``: ONNX Runtime, ``groqchip``: GroqFlow), ``textsets`` (the shipped sentence
sets), ``log`` (the GroqFlow log reader, ``GroqReader``).
"""

from labkit.testbeds.groq.custom_text import custom, shape_lesson
from labkit.testbeds.groq.exercise import plan, run_exercise
from labkit.testbeds.groq.metrics import METRICS
from labkit.testbeds.groq.report import log_table, show, show_latency, show_parity, table_from_runs
from labkit.testbeds.groq.spec import SPEC
from labkit.testbeds.groq.steps import build, evaluate, load_data, load_model

__all__ = ["SPEC", "METRICS", "plan", "run_exercise", "show", "show_latency", "show_parity", "custom", "shape_lesson",
           "load_model", "load_data", "build", "evaluate", "log_table", "table_from_runs"]
