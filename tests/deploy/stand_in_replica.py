"""A stand-in for ``python`` in ``deploy/run_replicas.sh`` (its PYTHON): replicas that behave the same every time.

``run_replicas.sh`` runs ``$PYTHON -m streamlit run streamlit_app.py ... --server.port PORT`` for each replica, and
``$PYTHON - PORTS`` for its health check. This script runs anything else with the real Python, and serves, in place of
Streamlit, a replica that answers ``/_stcore/health`` with 200 and treats an upload (``PUT``) by its port's role:

- the first port of ``REPLICA_PORTS`` (the replica the test's cookie names) resets the connection as soon as it has
  read the upload's headers, as a Streamlit replica asked for a session it does not hold may (it answers 400 before
  reading the body and closes, while nginx is still sending it);
- every other port reads the whole body and stores it: 204.

Run only by ``tests/deploy/test_deploy.py``, through a two-line shell wrapper naming this file.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class StandIn(BaseHTTPRequestHandler):
    """One replica: health answered, an upload reset or stored by the port's role."""

    resets_uploads = False

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self._answer(200 if self.path.startswith("/_stcore/health") else 404)

    def do_PUT(self) -> None:  # noqa: N802
        if self.resets_uploads:  # RST at once: SO_LINGER on, 0 s, then close (the body is never read)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._answer(204)

    def _answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:  # quiet: the run folder's replica log stays empty
        pass


def serve(port: int) -> None:
    """Serve the stand-in replica on 127.0.0.1:``port`` until killed (run_replicas.sh stops it with SIGTERM)."""
    first = os.environ["REPLICA_PORTS"].split()[0]
    handler = type("Replica", (StandIn,), {"resets_uploads": str(port) == first})
    ThreadingHTTPServer(("127.0.0.1", port), handler).serve_forever()


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:2] == ["-m", "streamlit"]:
        serve(int(args[args.index("--server.port") + 1]))
    else:
        os.execv(sys.executable, [sys.executable, *args])
