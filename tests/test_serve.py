"""`python run.py serve` through real HTTP on 127.0.0.1, on the CPU: verdicts as run.py gives them, clear refusals,
a token, a candidate that crashes leaving the service up, and a service killed with SIGKILL that finishes its jobs
when started again (each judged once)."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from support import FAST_CONFIG, FIXTURES, ROOT

RELU = (FIXTURES / "problems" / "fx_relu.py").read_text()
HONEST = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp(min=0)\n"
WRONG = HONEST.replace("min=0", "min=0.1")
SLOW = HONEST.replace("return", "import time\n        time.sleep(0.5)\n        return")  # each call 0.5 s
EXITS = "import os\nimport torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        os._exit(3)\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(state, *extra) -> tuple:
    """A service on a free port (its process, a Client) once /v1/health answers."""
    from harness.runner.client import Client

    port = free_port()
    proc = subprocess.Popen([sys.executable, "run.py", "serve", "--port", str(port), "--device", "cpu", "--config",
                             str(FAST_CONFIG), "--state", str(state), *extra], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    client = Client(f"http://127.0.0.1:{port}", token=dict(zip(extra[::2], extra[1::2])).get("--token"))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            client.health()
            return proc, client
        except OSError:
            assert proc.poll() is None, proc.stdout.read()
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("the service did not answer within 120 s")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    proc, client = start(tmp_path_factory.mktemp("service"))
    yield client
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == -signal.SIGTERM, proc.stdout.read()  # drained, then ended by the signal


def test_verdicts_through_http_are_run_pys(service):
    ids = service.submit_batch([(RELU, HONEST), (RELU, WRONG), (RELU, EXITS)])
    results = [service.wait(job_id, timeout=300) for job_id in ids]
    assert [r["status"] for r in results] == ["correct", "incorrect", "crash"], [r["error"] for r in results]
    assert results[0]["speedup"] and results[0]["speedup_ci_low"] <= results[0]["speedup_ci_high"]
    assert service.health()["status"] == "ok"  # a worker that exited took nothing else down
    rl = service.evaluate(RELU, HONEST, preset="rl", timeout=300)
    assert rl["status"] == "correct" and rl["preset"] == "rl" and rl["trials"] == 3


def test_bad_requests_get_clear_refusals(service):
    from harness.runner.client import ServiceError

    def refused(method, path, body=None, raw=None):
        with pytest.raises(ServiceError) as caught:
            if raw is None:
                service.request(method, path, body)
            else:
                request = urllib.request.Request(service.url + path, data=raw, method=method,
                                                 headers={"Content-Type": "application/json"})
                try:
                    urllib.request.urlopen(request, timeout=30)
                except urllib.error.HTTPError as exc:
                    raise ServiceError(exc.code, exc.read().decode()) from None
        return caught.value.status, str(caught.value)

    status, text = refused("POST", "/v1/evaluations", {"problem": RELU})
    assert status == 422 and "candidate" in text
    assert refused("POST", "/v1/evaluations", raw=b"{not json")[0] == 422
    status, text = refused("POST", "/v1/evaluations", {"problem": RELU, "candidate": "print(1)"})
    assert status == 422 and "ModelNew" in text
    status, text = refused("POST", "/v1/evaluations", {"problem": RELU, "candidate": HONEST,
                                                       "options": {"sizes": {"batchsize": 2}}})
    assert status == 422 and "batchsize" in text
    status, text = refused("POST", "/v1/evaluations", {"problem": RELU, "candidate": HONEST,
                                                       "options": {"settings": {"device": "cuda"}}})
    assert status == 422 and "device" in text
    assert oversized_answer(service.url) == 413  # refused on its Content-Length, before any body is read
    assert refused("GET", "/v1/evaluations/0123456789abcdef")[0] == 404
    before = service.health()["queued"] + service.health()["running"]
    status, text = refused("POST", "/v1/batches", {"evaluations": [{"problem": RELU, "candidate": HONEST},
                                                                   {"problem": RELU, "candidate": "x = 1"}]})
    assert status == 422 and service.health()["queued"] + service.health()["running"] <= before  # none journaled
    with urllib.request.urlopen(service.url + "/docs", timeout=30) as page:
        assert page.status == 200
    with urllib.request.urlopen(service.url + "/openapi.json", timeout=30) as spec:
        assert "/v1/evaluations" in json.loads(spec.read())["paths"]


def oversized_answer(url: str) -> int:
    """The status of a POST that announces 2 MiB (and sends none of it)."""
    import http.client

    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.putrequest("POST", "/v1/evaluations")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(2 << 20))
    conn.endheaders()
    try:
        return conn.getresponse().status
    finally:
        conn.close()


def test_a_token_is_required_when_set_and_off_loopback(tmp_path):
    from harness.runner.client import Client, ServiceError

    proc, client = start(tmp_path / "state", "--token", "s3cret")
    try:
        with pytest.raises(ServiceError, match="401"):
            Client(client.url).submit(RELU, HONEST)
        assert client.get(client.submit(RELU, HONEST))["state"] in ("queued", "running", "done")
    finally:
        proc.kill()
        proc.wait()
    off_loopback = subprocess.run([sys.executable, "run.py", "serve", "--host", "0.0.0.0", "--device", "cpu"],
                                  cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert off_loopback.returncode == 2 and "--token" in off_loopback.stderr


def test_a_killed_service_finishes_its_jobs_once_when_started_again(tmp_path):
    state = tmp_path / "state"
    proc, client = start(state)
    ids = client.submit_batch([(RELU, SLOW), (RELU, HONEST)])
    deadline = time.monotonic() + 120
    while client.get(ids[0])["state"] != "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc, client = start(state)
    try:
        results = [client.wait(job_id, timeout=300) for job_id in ids]
        assert [r["status"] for r in results] == ["correct", "correct"], [r["error"] for r in results]
        logged = [json.loads(line)["job"] for line in (state / "results.jsonl").read_text().splitlines()]
        assert sorted(logged) == sorted(ids)  # each judged to its end once
        running, queued = client.submit_batch([(RELU, SLOW), (RELU, HONEST)])
        while client.get(running)["state"] != "running":
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == -signal.SIGTERM
    assert (state / "results" / f"{running}.json").exists()  # SIGTERM let the running job end
    assert (state / "jobs" / f"{queued}.json").exists()  # the queued one stays journaled for the next start
