"""A minimal HTTP inference server to aim ``surrobench serve --url`` at (stdlib ``http.server``, no batching).

    python examples/serve_http.py --model fno2d --shape 64 --port 8000
    surrobench serve --url http://127.0.0.1:8000/ --rate 50,100 --duration-s 10

Each ``POST`` runs the model once on its own batch-1 input (one request at a time, under a lock: the model
is not assumed to be thread-safe) and answers ``{"id": ..., "ms": ...}``. It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch
from torch import nn


def make_server(model: nn.Module, inputs: tuple[torch.Tensor, ...], port: int = 0) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:``port`` (0: any free port, ``server.server_address[1]``) running ``model`` on
    ``inputs`` (its positional inputs) per request; call ``serve_forever()`` (a thread will do) and ``shutdown()``."""
    lock = threading.Lock()
    model.eval()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            began = time.perf_counter()
            with lock, torch.inference_mode():
                model(*inputs)
            reply = json.dumps({"id": body.get("id"), "ms": (time.perf_counter() - began) * 1e3}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args) -> None:  # one line per request would swamp the terminal
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="fno2d", help="a surrobench zoo name")
    parser.add_argument("--shape", type=int, default=64, help="grid size N of the (1, 3, N, N) input")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    from surrobench.workload.spec import ShapeSpec
    from surrobench.workload.zoo import get_surrogate

    surrogate = get_surrogate(args.model)
    torch.manual_seed(0)
    inputs = surrogate.example_inputs(
        1, ShapeSpec(size=args.shape), generator=torch.Generator(), device=torch.device("cpu")
    )
    server = make_server(surrogate.build(), inputs, args.port)
    print(f"serving {args.model} at http://127.0.0.1:{server.server_address[1]}/")
    server.serve_forever()


if __name__ == "__main__":
    main()
