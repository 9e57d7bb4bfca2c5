"""A small client of `run.py serve` (the standard library's HTTP only):
    client = Client("http://127.0.0.1:8000", token=None)
    result = client.evaluate(problem_source_or_name, candidate_source, preset="rl")   # a results.jsonl record"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Optional


class ServiceError(Exception):
    """The service refused a request: its HTTP status and message."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class Client:
    """Submit evaluations, follow them, wait for their Results."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 30.0):
        self.url, self.token, self.timeout = url.rstrip("/"), token, timeout

    def submit(self, problem: str, candidate: str, **options) -> str:
        """Queue one pair (options: precision, mode, preset, sizes, settings); its id."""
        return self.request("POST", "/v1/evaluations", {"problem": problem, "candidate": candidate,
                                                        "options": options})["id"]

    def submit_batch(self, pairs: list, **options) -> list[str]:
        """Queue several (problem, candidate) pairs with the same options; their ids, in order."""
        evaluations = [{"problem": p, "candidate": c, "options": options} for p, c in pairs]
        return self.request("POST", "/v1/batches", {"evaluations": evaluations})["ids"]

    def get(self, job_id: str) -> dict:
        """{"id", "state": queued|running|done, "result" once done}."""
        return self.request("GET", f"/v1/evaluations/{job_id}")

    def wait(self, job_id: str, timeout: float = 3600.0, poll_s: float = 0.2) -> dict:
        """The job's Result (a results.jsonl record) once done; TimeoutError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.get(job_id)
            if found["state"] == "done":
                return found["result"]
            if time.monotonic() > deadline:
                raise TimeoutError(f"evaluation {job_id} still {found['state']} after {timeout:g} s")
            time.sleep(poll_s)

    def evaluate(self, problem: str, candidate: str, timeout: float = 3600.0, **options) -> dict:
        """Submit and wait: one pair's Result."""
        return self.wait(self.submit(problem, candidate, **options), timeout)

    def health(self) -> dict:
        return self.request("GET", "/v1/health")

    def request(self, method: str, path: str, body: Optional[dict] = None) -> dict:
        """One JSON request; a refusal is a ServiceError."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise ServiceError(exc.code, exc.read().decode(errors="replace")[:2000]) from None
