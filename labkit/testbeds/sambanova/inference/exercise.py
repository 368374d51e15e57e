"""The inference notebook's plan and run steps (its show step is :func:`report.show`): a local
endpoint's stand-in server runs for the run step only (docs/sambanova.md, "The stand-in"), and
:func:`as_run` makes the one record, whose exact counts the golden copy and grading compare.
"""

from __future__ import annotations

import contextlib
import secrets
from typing import Any, Dict, List, Mapping, Optional

from labkit import interrupts, serving
from labkit.interrupts import run_step
from labkit.params import Config
from labkit.plans import RunPlan
from labkit.results import Run
from labkit.testbeds.sambanova.inference import evidence
from labkit.testbeds.sambanova.inference.access import NotServed, Secret, find_token, is_alcf, key_for, readiness
from labkit.testbeds.sambanova.inference.client import Endpoint, Options
from labkit.testbeds.sambanova.inference.measure import Measured, local_tokenizer, measure, summarize_batches
from labkit.testbeds.sambanova.inference.metrics import HEADLINE, METRICS, SERVER_FIELDS, add_counts
from labkit.testbeds.sambanova.inference.prompts import load_prompts, synthetic_prompts
from labkit.testbeds.sambanova.inference.report import (STAND_IN, comparison_notes, failure_notes, load_label,
                                                        load_notes, rated)
from labkit.testbeds.sambanova.inference.spec import (ENDPOINTS, RENAMED, is_local, local_configuration,
                                                     targets_of)
from labkit.testbeds.sambanova.inference.timing import configuration_rows, server_rows

__all__ = ["plan", "run_exercise"]


def _served_by(url: str) -> str:
    return next((known["server"] for known in ENDPOINTS.values() if known["base_url"] == url), "the server at " + url)


def plan(config: Config) -> RunPlan:
    """What will be measured where (the stand-in here, a remote service, or pasted evidence), and why."""
    if config.log_path:
        return RunPlan("log", "reads {} piece(s) of pasted evidence: {}".format(len(config.log_path),
                                                                                  ", ".join(config.log_path)),
                       "log_path is set: nothing is sent")
    lines = []
    for name, url, model in zip(config.endpoint_names, config.base_urls, config.models):
        if is_local(url):
            lines.append("  {}: the local stand-in server, configuration {!r}, model labkit-llama-{} ({})".format(
                name, local_configuration(url), config.local_model_size, STAND_IN))
        else:
            if model in RENAMED:
                model = "{} (now {}: {})".format(model, *RENAMED[model])
            lines.append("  {}: {} at {} ({})".format(name, model, url, _served_by(url)))
    local = all(is_local(u) for u in config.base_urls)
    where = ("the local stand-in server on 127.0.0.1, {}".format(STAND_IN) if local
             else "the endpoints below, over the network")
    why = ("base_urls are local:<configuration>: Run All needs no network or account" if local
           else "base_urls name running servers; ALCF's take the token from inference_auth_token.py or ${}, "
                "others $OPENAI_API_KEY or no key".format(config.token_env))
    more = ["Endpoints:"] + lines + [
        "{} prompt(s) from {!r}, max_tokens={}, temperature={}, seed={}".format(
            config.num_prompts, config.dataset, config.max_tokens, config.temperature, config.seed),
        "Concurrency {}, {} repeat(s), {} warm-up request(s) per endpoint left out: {} measured requests".format(
            config.concurrency, config.repeats, config.warmup_requests,
            len(config.base_urls) * len(config.concurrency) * config.repeats * config.num_prompts)]
    return RunPlan("portable" if local else "testbed", where, why, more=more)


_plan_step = plan


def _options_of(config: Config) -> Options:
    fixed = config.output_tokens is not None
    return Options(max_tokens=config.output_tokens if fixed else config.max_tokens, temperature=config.temperature,
                   seed=config.seed, timeout_s=config.timeout_s, ignore_eos=config.ignore_eos or fixed)


def _endpoints(config: Config, stack: contextlib.ExitStack) -> List[Endpoint]:
    """The endpoints, starting each local configuration's server once (it stops when ``stack`` closes)."""
    servers: Dict[str, Any] = {}
    token: Optional[Secret] = None
    found = []
    for name, url, model in zip(config.endpoint_names, config.base_urls, config.models):
        if is_local(url):
            which = local_configuration(url)
            if which not in servers:
                key = secrets.token_hex(16)  # the stand-in asks for a key, as the ALCF service does
                servers[which] = (stack.enter_context(serving.start_server(
                    config=which, model_size=config.local_model_size, seed=config.seed, api_key=key,
                    reasoning_tokens=config.local_reasoning_tokens)), key)
            server, key = servers[which]
            found.append(Endpoint(name, server.base_url, server.model if model == "auto" else model,
                                  Secret(key, "the local server"), "the stand-in, {}".format(which), local=True))
        elif is_alcf(url):
            token = token or find_token(config.token_env)
            found.append(Endpoint(name, url, model, token, _served_by(url)))
        else:  # a server of the student's own (a vLLM, the stand-in from a shell): no ALCF token
            found.append(Endpoint(name, url, model, key_for(url), _served_by(url)))
    return found


def _tokenizer_for(endpoints: List[Endpoint]) -> Any:
    """The tokenizer that sizes synthetic prompts: the stand-in's own, else the first endpoint's model's
    from the local cache (None: words are counted as tokens, an estimate)."""
    for endpoint in endpoints:
        if endpoint.local:
            from labkit import llm

            return llm.corpus_tokenizer(llm.load_corpus(), vocab_size=2048)  # the stand-in's (serving/model.py)
    return local_tokenizer(endpoints[0].model)


@run_step
def run_exercise(config: Config, plan: Optional[RunPlan] = None) -> Run:
    """Measure the endpoints (or read ``log_path``) and return the run; ``run.details`` holds the
    per-request traces, the configuration rows and the server's timings. The requests' progress
    bar follows :mod:`labkit.progress` (``LABKIT_PROGRESS=off`` hides it)."""
    chosen = plan if plan is not None else _plan_step(config)
    if chosen.path == "log":
        return evidence.read_evidence(config.log_path)
    prompts: List[Any] = load_prompts(config.dataset, config.dataset_split, config.dataset_field, config.num_prompts)
    measured = Measured()
    with contextlib.ExitStack() as stack:
        endpoints = _endpoints(config, stack)
        ready = [readiness(e) for e in endpoints]
        for line in ready:
            print(line.sentence)
        not_ready = [line for line in ready if not line.ready]
        if not_ready:
            raise NotServed("; ".join(line.sentence for line in not_ready))
        if config.input_tokens is not None or config.output_tokens is not None:
            prompts = synthetic_prompts(prompts, config.num_prompts, config.input_tokens, config.output_tokens,
                                        config.length_range, config.seed, _tokenizer_for(endpoints))
        measured.readiness = [line.renamed for line in ready if line.renamed]
        # from here an interrupt keeps every batch measured: in the requests, the summary, as the servers stop
        stop = interrupts.keep(lambda: _kept(config, endpoints, measured, chosen.path))
        knee = {"max_requests": config.knee_max_requests, "max_s": config.knee_max_s} if config.knee else None
        measure(endpoints, prompts, config.concurrency, config.repeats, config.warmup_requests,
                _options_of(config), targets_of(config), rates=config.request_rate,
                cap=config.max_concurrency, burstiness=config.burstiness, seed=config.seed, knee=knee,
                into=measured)
        stop.phase("servers stopping", check=False)
    # an interrupt in the summary or as the servers stopped ends the run here, kept (none measured: none)
    stop.phase(interrupts.DONE, check=not (measured.stopped and measured.any_ended))
    return as_run(config, endpoints, measured, targets_of(config), source=chosen.path)


def _kept(config: Config, endpoints: List[Endpoint], measured: Measured, source: str) -> Optional[Run]:
    """The run of the batches measured before an interrupt; None while no measured request has ended."""
    if not measured.any_ended:
        return None
    summarize_batches(measured, endpoints, targets_of(config))
    return as_run(config, endpoints, measured, targets_of(config), source=source)


#: Series per endpoint against concurrency: (row key, series name). Every name holds a timing word.
SERIES = (("ttft_median_s", "ttft_median_time"), ("tpot_median_s", "tpot_median_time"),
          ("e2el_median_s", "e2el_median_latency"), ("output_throughput", "output_throughput"))


def as_run(config: Config, endpoints: List[Endpoint], measured: Measured, targets: Mapping[str, float],
           source: str) -> Run:
    """The measured batches as one run (metrics.py says what it holds)."""
    run = Run("sambanova/inference", source=source, status="complete", params=config.to_dict())
    rows = configuration_rows(measured.batches)
    reference = [r for r in rows if r["endpoint"] == endpoints[0].name][:1]
    label = load_label(reference[0]) if reference else "concurrency {}".format(config.concurrency[0])
    run.environment["reference_configuration"] = "{} at {}".format(endpoints[0].name, label)
    run.environment["served_by"] = {e.name: (STAND_IN if e.local else e.what) for e in endpoints}
    server = server_rows(measured.batches)
    traces = measured.traces
    done = [t for t in traces if t.ok]
    add = METRICS.add
    sources = sorted({t.token_source for t in done if t.token_source})
    tokens = sum(t.output_tokens or 0 for t in done)
    add_counts(run, len(traces), len(done), tokens, ", ".join(sources) or "none")
    add(run, "warmup_requests", len(measured.warmup))
    add(run, "endpoints", len(endpoints))
    add(run, "concurrency_levels", len(config.concurrency))
    if reference and reference[0]["completed"]:
        for key, name in HEADLINE:
            if key == "goodput" and not targets:
                continue
            add(run, name, reference[0][key])
        for row in server:
            if row["endpoint"] == endpoints[0].name and row["load"] == reference[0]["load"]:
                for _field, name in SERVER_FIELDS:
                    add(run, name, row[name])
    for endpoint in endpoints:
        mine = [r for r in rows if r["endpoint"] == endpoint.name]
        for key, name in SERIES:
            run.add_series("{}:{}".format(name, endpoint.name), [r["load"] for r in mine],
                           [r[key] for r in mine], x_label="request rate" if rated(rows) else "concurrency")
    run.notes.extend(failure_notes(traces + measured.warmup, endpoints, config.timeout_s))
    run.notes.extend(comparison_notes(endpoints, rows, server, config.warmup_requests, sources))
    run.notes.extend(load_notes(rows, measured.knees, config.burstiness))
    run.notes.extend(measured.readiness)
    if measured.stopped:
        run.mark_interrupted(measured.stopped, "the batches measured before the stop are kept, the one in flight "
                                               "has its completed requests and its others marked interrupted")
    elif traces and not done:
        run.status = "failed"
    elif len(done) < len(traces):
        run.status = "incomplete"
    run.environment["endpoints"] = [{"name": e.name, "base_url": e.base_url, "model": e.model, "served_by": e.what,
                                     "token_from": e.api_key.source} for e in endpoints]
    run.details = {"requests": [t.row() for t in traces], "rows": rows, "server": server,  # type: ignore[attr-defined]
                   "warmup": [t.row() for t in measured.warmup], "traces": traces, "knees": measured.knees}
    return run

