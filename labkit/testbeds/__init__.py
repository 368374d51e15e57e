"""One module per testbed exercise: its parameter spec and the steps its notebook calls."""
