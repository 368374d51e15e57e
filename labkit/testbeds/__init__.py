"""One module per AI testbed: its exercise specs, its vendor path and its portable path.

    from labkit.testbeds import sambanova
    config = sambanova.BERT_SPEC.validate({"ntasks": 2, "model_size": "micro"})
"""
