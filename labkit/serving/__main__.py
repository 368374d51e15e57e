"""The server process: ``python -m labkit.serving --config batched --model-size tiny``.

It loads the model, listens on 127.0.0.1 at a port the system chooses (``--port 0``), and
prints one JSON line on stdout when it is ready::

    {"ready": true, "base_url": "http://127.0.0.1:40123/v1", "port": 40123, "model": "...", "pid": 4242, ...}

It stops cleanly (the listening socket closed, requests in flight ended with an error) on
SIGINT or SIGTERM, when its standard input reaches end of file (``--watch-stdin``: the parent
holds the other end of that pipe, so the server ends with its parent however the parent dies),
and when the process ``--parent-pid`` is gone. The API key, if any, is read from the
environment variable ``LABKIT_SERVING_API_KEY`` (never from the command line, which other users
of the machine can read).

Exit status: 0 after a clean stop, 2 for bad arguments, 1 when the model or the socket failed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from typing import List, Optional

from labkit.serving.configs import API_KEY_ENV, CONFIGS, DEFAULT_MAX_QUEUE, DEFAULT_THREADS, REASONING_FIELDS
from labkit.serving.engine import Engine
from labkit.serving.handler import ChatServer
from labkit.serving.model import load_model


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m labkit.serving", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", choices=sorted(CONFIGS), default="batched",
                        help="batched: continuous batching; sequential: one request at a time")
    parser.add_argument("--model-size", default="tiny", help="the model's size preset")
    parser.add_argument("--model-dir", default=None, help="a save_pretrained directory to load instead")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the random initialisation")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: the system chooses a free port")
    parser.add_argument("--max-batch", type=int, default=None,
                        help="most requests decoded together (default: the config's)")
    parser.add_argument("--max-queue", type=int, default=DEFAULT_MAX_QUEUE,
                        help="requests that may wait beyond those being decoded before a 429")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS,
                        help="torch's CPU threads for decoding (default 1: see DEFAULT_THREADS)")
    parser.add_argument("--parent-pid", type=int, default=None, help="stop when this process is gone")
    parser.add_argument("--watch-stdin", action="store_true", help="stop when standard input closes")
    parser.add_argument("--reasoning-tokens", type=int, default=0,
                        help="answer as a reasoning model: the first N tokens of each completion are reasoning")
    parser.add_argument("--reasoning-field", choices=REASONING_FIELDS, default=REASONING_FIELDS[0],
                        help="the delta/message field the reasoning goes in (vLLM: reasoning_content; "
                             "newer vLLM and others: reasoning)")
    parser.add_argument("--verbose", action="store_true",
                        help="log every request (and every client that hangs up) on stderr")
    return parser


def _watch_stdin(stop: threading.Event) -> None:
    # os.read, not sys.stdin: a daemon thread blocked in the buffered reader aborts the interpreter's exit
    try:
        while os.read(sys.stdin.fileno(), 4096):
            pass
    except (OSError, ValueError):
        pass
    stop.set()


def _watch_parent(pid: int, stop: threading.Event) -> None:
    try:
        import psutil
    except ImportError:  # re-parenting alone tells (POSIX)
        psutil = None
    parent = os.getppid() == pid  # then re-parenting tells that it died, even if its pid is reused
    while not stop.wait(0.5):
        if (parent and os.getppid() != pid) or (psutil is not None and not psutil.pid_exists(pid)):
            stop.set()


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.max_queue < 0 or args.threads < 1 or (args.max_batch is not None and args.max_batch < 1) or \
            args.reasoning_tokens < 0:
        print("--max-queue and --reasoning-tokens must be 0 or more, --threads and --max-batch 1 or more",
              file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    if args.watch_stdin:
        threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
    if args.parent_pid is not None:
        threading.Thread(target=_watch_parent, args=(args.parent_pid, stop), daemon=True).start()
    try:
        import torch

        torch.set_num_threads(args.threads)
        model = load_model(args.model_size, args.model_dir, seed=args.seed)
        engine = Engine(model, max_batch=args.max_batch or CONFIGS[args.config], max_queue=args.max_queue).start()
        server = ChatServer((args.host, args.port), model, engine, args.config,
                            api_key=os.environ.get(API_KEY_ENV) or None, verbose=args.verbose)
        server.reasoning_tokens, server.reasoning_field = args.reasoning_tokens, args.reasoning_field
    except (OSError, ValueError) as error:
        print("labkit.serving: could not start: {}".format(error), file=sys.stderr)
        return 1
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    host = "127.0.0.1" if args.host in ("", "0.0.0.0") else args.host
    ready = {"ready": True, "base_url": "http://{}:{}/v1".format(host, server.port), "port": server.port,
             "model": model.name, "config": args.config, "max_batch": engine.max_batch,
             "max_queue": engine.max_queue, "reasoning_tokens": args.reasoning_tokens, "threads": torch.get_num_threads(), "description": model.description,
             "pid": os.getpid()}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    sys.stdout = sys.stderr  # nothing more on the pipe the parent read the ready line from
    print("labkit.serving: {} ({}) at {}".format(model.name, args.config, ready["base_url"]), file=sys.stderr)
    while not stop.wait(0.5):
        pass
    print("labkit.serving: stopping", file=sys.stderr)
    server.shutdown()  # no new connection
    engine.stop()  # requests in flight end with an error event, so their clients stop waiting
    server.drain(timeout=2.0)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
