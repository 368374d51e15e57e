"""What grading writes: gradebook, feedback, summary.md, the class page (docs/architecture.md has the modules)."""
