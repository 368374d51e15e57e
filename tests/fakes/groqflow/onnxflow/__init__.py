"""Fake onnxflow (the build framework GroqFlow 4.3.1 imports from mlagility 3.3.1): its exceptions
and its printing, which labkit meets through GroqFlow's errors. See groqflow/__init__.py."""
