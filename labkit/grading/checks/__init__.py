"""What a submission is graded on: the rubric and its checks (docs/architecture.md has the modules)."""
