"""labkit.display's one rule, outside a kernel (pytest has none): objects come back to inspect.

In a kernel the same calls show the objects and return None; tests/test_editing_cells.py and the
golden notebooks check that side (one figure per show step, no repeated output).
"""

from __future__ import annotations

from labkit import display


def test_outside_a_kernel_show_returns_the_object_and_a_show_step_the_list_of_them():
    assert not display.in_kernel()
    table = {"metric": "value"}
    assert display.show(table) is table
    assert display.shown([display.show(table), None, "figure"]) == [table, "figure"]  # None: nothing drawn
    assert display.shown([]) == []
