"""The plan step's object (labkit.plans): what it says, as text and HTML, and the device reasons."""

from __future__ import annotations

from labkit.plans import RunPlan, device_why


def test_a_plan_says_where_and_why_in_text_and_html():
    plan = RunPlan("portable", "portable PyTorch on cpu", "device='cpu' was asked for", "cpu", ["- more <here>"])
    assert str(plan) == repr(plan) == "Where: portable PyTorch on cpu\nWhy: device='cpu' was asked for\n- more <here>"
    html = plan._repr_html_()
    assert "<b>Where:</b> portable PyTorch on cpu" in html and "<b>Why:</b> device=&#x27;cpu&#x27;" in html
    assert "- more &lt;here&gt;" in html  # the extra lines are escaped, not markup


def test_the_device_reason_names_what_was_asked_or_what_auto_found():
    assert device_why("device", "cpu", "cpu") == "device='cpu' was asked for"
    assert "there is none here, so the CPU" in device_why("target", "auto", "cpu")
    assert device_why("device", "auto", "cuda").startswith("device='auto' takes a CUDA GPU")
