"""The service's client (harness/runner/client.py) against a stand-in server: a refusal is a ServiceError with the
status, a job still running past the wait is a TimeoutError. (Against the real service: tests/test_serve.py.)"""
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest


class StandIn(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/v1/evaluations/forever":
            self.answer(200, {"id": "forever", "state": "running"})
        else:
            self.answer(404, {"detail": "no evaluation"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.answer(401 if self.headers.get("Authorization") != "Bearer t" else 202, {"id": body["problem"]})

    def answer(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_refusals_and_waits():
    from harness.runner.client import Client, ServiceError

    server = HTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        assert Client(url, token="t").submit("p", "c", preset="rl") == "p"
        with pytest.raises(ServiceError) as refused:
            Client(url).submit("p", "c")
        assert refused.value.status == 401
        with pytest.raises(ServiceError, match="404"):
            Client(url).get("missing")
        with pytest.raises(TimeoutError, match="still running"):
            Client(url).wait("forever", timeout=0.3, poll_s=0.1)
    finally:
        server.shutdown()
