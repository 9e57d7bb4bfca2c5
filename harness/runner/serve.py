"""`python run.py serve`: the evaluation service over HTTP (FastAPI on uvicorn), its jobs in service.Service.
POST /v1/evaluations (202, an id), GET /v1/evaluations/{id}, POST /v1/batches, GET /v1/health, OpenAPI at /docs.
(No `from __future__ import annotations`: FastAPI reads the routes' annotations as objects.)"""
import argparse
import hmac
import ipaddress
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Optional

from harness.common import procs
from harness.common.config import build_config, presets
from harness.common.devices import is_gpu
from harness.common.errors import UserError
from harness.runner import environment
from harness.runner.schedulers import physical_gpus
from harness.runner.service import Service

MAX_REQUEST_BYTES = 1 << 20  # a problem and a candidate of KernelBench's are a few KB each
MAX_BATCH = 256


def serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="run.py serve", description="Judge pairs sent over HTTP: POST "
                                     "/v1/evaluations, GET /v1/evaluations/{id}; OpenAPI at /docs (docs/library.md).")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; any other needs "
                                                            "--token)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--device", help="auto, cpu, cuda or cuda:N (default from config: auto)")
    where.add_argument("--devices", help="GPUs to spread jobs over: 0,1 or all (one job at a time on each)")
    parser.add_argument("--state", default="results/service", help="folder of the journal and results: a service "
                                                                    "started again on it finishes the jobs it holds")
    parser.add_argument("--token", help="clients must send `Authorization: Bearer TOKEN`")
    parser.add_argument("--config", metavar="FILE", help="YAML config layered over configs/default.yaml")
    parser.add_argument("--preset", choices=presets(), help="the jobs' default preset (a job's options may name "
                                                            "another)")
    return parser


def serve_command(argv: list) -> int:
    """Start the service; SIGTERM or Ctrl-C drains it (the running jobs end, the queued stay journaled)."""
    args = serve_parser().parse_args(argv)
    check_bind(args.host, args.token)
    try:
        import uvicorn
    except ImportError:
        raise UserError("run.py serve needs fastapi and uvicorn: pip install -r requirements.txt") from None
    overrides = {k: v for k, v in {"device": args.device, "preset": args.preset}.items() if v is not None}
    config = build_config(args.config, overrides)
    env = environment.probe_environment("auto" if args.devices else config.device)
    devices = (environment.resolve_devices(args.devices, env) if args.devices
               else [environment.resolve_device(config.device, env)])
    service = Service(Path(args.state), args.config, overrides, devices, env)
    print(f"serving on http://{args.host}:{args.port} ({', '.join(devices)}); state in {args.state}; "
          f"{service.recovered} unfinished job(s) taken up again", flush=True)
    with procs.timing_cpus_kept_free(physical_gpus(tuple(devices)) if is_gpu(devices[0]) else ()):
        uvicorn.run(make_app(service, args.token), host=args.host, port=args.port, log_level="warning")
    return 0


def check_bind(host: str, token: Optional[str]) -> None:
    """A bind other than the loopback needs a token."""
    try:
        local = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = False
    if not local and not token:
        raise UserError(f"--host {host} is reachable from other machines: give --token TOKEN too")


def schemas() -> tuple:
    """The request bodies (pydantic models): (Evaluation, Batch); a bad one is answered 422 by FastAPI."""
    from pydantic import BaseModel, Field

    class Options(BaseModel):
        precision: Optional[str] = Field(None, description="fp32, fp16 or bf16")
        mode: Optional[str] = Field(None, description="constructed or eval")
        preset: Optional[str] = Field(None, description="default or rl")
        sizes: dict = Field(default_factory=dict, description="module constants to override, as --set")
        settings: dict = Field(default_factory=dict, description="configs/default.yaml's keys")

    class Evaluation(BaseModel):
        problem: str = Field(..., min_length=1, description="a problem's name under problems/, or its source")
        candidate: str = Field(..., min_length=1, description="the candidate's source (defines ModelNew)")
        options: Optional[Options] = None

    class Batch(BaseModel):
        evaluations: list[Evaluation] = Field(..., min_length=1, max_length=MAX_BATCH)

    return Evaluation, Batch


def make_app(service: Service, token: Optional[str] = None):
    """The FastAPI application over `service` (started with the app, drained when it stops)."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    @asynccontextmanager
    async def lifespan(app):
        service.start()
        yield
        service.drain()

    app = FastAPI(title="kernel-harness", lifespan=lifespan,
                  description="Judge a candidate kernel (ModelNew) against a problem (Model): README, docs/library.md")

    @app.middleware("http")
    async def limit_size(request: Request, call_next):
        size = request.headers.get("content-length")
        if request.method == "POST" and size is None:  # a chunked body could be of any size
            return JSONResponse({"detail": "a request body needs a Content-Length"}, status_code=411)
        if size is not None and (not size.isdigit() or int(size) > MAX_REQUEST_BYTES):
            return JSONResponse({"detail": f"request over {MAX_REQUEST_BYTES} bytes"}, status_code=413)
        return await call_next(request)

    add_routes(app, service, token)
    return app


def add_routes(app, service: Service, token: Optional[str]) -> None:
    """The /v1 routes, each but health behind the token when there is one."""
    from fastapi import Depends, HTTPException, Request

    Evaluation, Batch = schemas()

    def authorized(request: Request) -> None:
        given = request.headers.get("authorization", "")
        if token and not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise HTTPException(401, "missing or wrong token (Authorization: Bearer TOKEN)")

    def accept(evaluations: list) -> list[str]:
        """Journal them all, or none: each checked first."""
        items = [(e.problem, e.candidate, e.options.model_dump(exclude_none=True) if e.options else {})
                 for e in evaluations]
        try:
            return service.submit_many(items)
        except UserError as exc:  # a problem without Model, an unknown size or setting, ...
            raise HTTPException(422, str(exc)) from None
        except RuntimeError as exc:  # draining
            raise HTTPException(503, str(exc)) from None

    @app.post("/v1/evaluations", status_code=202, dependencies=[Depends(authorized)])
    def submit(evaluation: Evaluation) -> dict:  # type: ignore[valid-type]
        """Accept one pair; its id (the job is journaled before this answers)."""
        return {"id": accept([evaluation])[0], "state": "queued"}

    @app.post("/v1/batches", status_code=202, dependencies=[Depends(authorized)])
    def submit_batch(batch: Batch) -> dict:  # type: ignore[valid-type]
        """Accept several pairs; their ids, in order."""
        return {"ids": accept(batch.evaluations)}  # type: ignore[attr-defined]

    @app.get("/v1/evaluations/{job_id}", dependencies=[Depends(authorized)])
    def status(job_id: str) -> dict:
        """queued, running, or done with `result` (a results.jsonl record)."""
        found = service.status(job_id) if job_id.isalnum() else None
        if found is None:
            raise HTTPException(404, f"no evaluation {job_id}")
        return found

    @app.get("/v1/health")
    def health() -> dict:
        return service.health()
