"""Batch grading of homework notebooks (docs/grading.md); its modules: docs/architecture.md."""
