"""One module per testbed: its exercises' parameter specs and how each runs there."""
