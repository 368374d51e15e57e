"""LLM inference on SambaNova Metis (SN40L) against Sophia (vLLM), measured as serving benchmarks do.

docs/sambanova.md has the whole exercise: the local stand-in by default, what was verified where.
"""

from labkit.testbeds.sambanova.inference.access import AccessError, Secret, explain, find_token
from labkit.testbeds.sambanova.inference.evidence import SAMPLE_RESPONSE, evidence_table, parse_text, read_evidence
from labkit.testbeds.sambanova.inference.exercise import plan, run_exercise
from labkit.testbeds.sambanova.inference.metrics import METRICS
from labkit.testbeds.sambanova.inference.prompts import load_prompts
from labkit.testbeds.sambanova.inference.report import (latency_table, percentile_table, plot_latency, server_table,
                                                        show)
from labkit.testbeds.sambanova.inference.spec import ENDPOINTS, SPEC
from labkit.testbeds.sambanova.inference.timing import Trace, summarize

__all__ = ["SPEC", "plan", "run_exercise", "show", "ENDPOINTS", "METRICS", "latency_table",
           "percentile_table", "server_table", "plot_latency", "read_evidence", "parse_text", "evidence_table",
           "load_prompts", "SAMPLE_RESPONSE", "find_token", "explain", "Secret", "AccessError", "Trace", "summarize"]
