"""The Groq exercise: BERT-tiny on SST-2 (spring) or MiniLM on STS-B (autumn), compiled for an
inference engine and compared with the CPU. Notebook: notebooks/groq/bert_tiny.ipynb; see
docs/groq.md.

    from labkit.testbeds import groq
    config = groq.BERT_TINY_SPEC.validate({"num_samples": 50})
    loaded = groq.load_model(config); data = groq.load_data(config, loaded)
    engines = groq.build(config, loaded); result = groq.evaluate(config, loaded, data, engines)

Modules: ``steps`` (the spec and the notebook's steps), ``models`` (hub, local or offline
model), ``evalsets`` (evaluation sets, scores), ``backends`` (eager, ONNX Runtime, CUDA,
GroqFlow), ``textsets`` (the shipped sentence sets), ``log`` (the GroqFlow log reader).
"""

from labkit.testbeds.groq.steps import (COLUMNS, BERT_TINY_SPEC, GroqResult, build, custom, evaluate, load_data,
                                        load_model, log_table, make_run, plot_latency, shape_lesson,
                                        table_from_runs)

__all__ = ["BERT_TINY_SPEC", "load_model", "load_data", "build", "evaluate", "custom", "shape_lesson",
           "make_run", "plot_latency", "log_table", "table_from_runs", "GroqResult", "COLUMNS"]
