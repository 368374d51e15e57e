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
(verified only on the testbed). See docs/groq.md.

Modules, one concern each: ``spec`` (parameters and checks), ``exercise`` (the notebook's plan,
run and show steps, and the latency and parity sections), ``steps`` (load model and data,
build, evaluate), ``result`` (GroqResult and its tables), ``custom_text`` (the student's own
sentences, the fixed-shape lesson), ``report`` (run record, plot, tables from logs), ``models``
(hub, local or offline model), ``evalsets`` (evaluation sets, tokenization, scores), ``backends``
(which run here; ``engine``: eager CPU and CUDA, ``onnx_engine``: ONNX Runtime, ``groqchip``:
GroqFlow), ``textsets`` (the shipped sentence sets), ``log`` (the
GroqFlow log reader behind labkit.logs).
"""

from labkit.testbeds.groq.custom_text import custom, shape_lesson
from labkit.testbeds.groq.exercise import GroqDetails, plan, run_exercise, show, show_latency, show_parity
from labkit.testbeds.groq.report import log_table, make_run, plot_latency, table_from_runs
from labkit.testbeds.groq.result import GroqResult
from labkit.testbeds.groq.spec import SPEC, BERT_TINY_SPEC
from labkit.testbeds.groq.steps import build, evaluate, load_data, load_model

__all__ = ["SPEC", "BERT_TINY_SPEC", "plan", "run_exercise", "show", "show_latency", "show_parity", "GroqDetails",
           "load_model", "load_data", "build", "evaluate", "custom", "shape_lesson",
           "make_run", "plot_latency", "log_table", "table_from_runs", "GroqResult"]
