"""The runner <-> judge wire, one message a line, defined, written and read here. Runner to judge (stdin): Start,
Warm, Job, Go or End; judge to runner (its report pipe): ReadyToWarm, Warmed, Workers, Stage, Footprint, Outcome."""
from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass

from harness.common.config import Config


@dataclass(frozen=True)
class Start:
    """The run's config, the GPU to warm up on, and when the runner started the judge."""
    config: Config
    warm_device: str | None
    started_at: float


@dataclass(frozen=True)
class Warm:
    """Start CUDA now: no pair on this GPU is being timed."""


@dataclass(frozen=True)
class PairJob:
    """One pair as a judge is given it."""
    problem: str
    problem_path: str
    solution: str
    solution_path: str
    solution_source: str
    overrides: dict
    device: str
    config: Config
    secret: int  # seeds the trials; never on disk
    log_path: str  # the candidate's worker's output
    build_dir: str
    peaks_dir: str
    min_speedup: float | None = None  # the gate's bar
    flops: int | None = None  # by an earlier judge of this run
    tf32_flops: int | None = None
    block: int = 1  # > 1: a confirmation block (blocks.py)

    def to_dict(self) -> dict:
        return {**{f.name: getattr(self, f.name) for f in dataclasses.fields(self)}, "config": self.config.to_dict()}

    @classmethod
    def from_dict(cls, fields: dict) -> "PairJob":
        return cls(**{**fields, "config": Config.from_dict(fields["config"])})


@dataclass(frozen=True)
class Job:
    """The pair, when it was sent, and whether it waits for Go to time."""
    job: PairJob
    sent_at: float
    gated: bool


@dataclass(frozen=True)
class Go:
    """A gated pair may time now."""


@dataclass(frozen=True)
class End:
    """The run ended before it needed this judge."""


@dataclass(frozen=True)
class ReadyToWarm:
    """A judge started ahead waits for Warm."""


@dataclass(frozen=True)
class Warmed:
    """Its warm-up is over."""


@dataclass(frozen=True)
class Workers:
    """Its workers' PIDs (each a process group's leader)."""
    pids: list


@dataclass(frozen=True)
class Stage:
    """A stage of the pair begins (stages.py)."""
    name: str


@dataclass(frozen=True)
class Footprint:
    """A GPU pair's need, and whether it crowds the GPU (no judge ahead may then hold CUDA)."""
    need_mb: int
    device_mb: int
    crowded: bool


@dataclass(frozen=True)
class Outcome:
    """The pair's Result.to_dict()."""
    result: dict


def encode(message) -> str:
    """One message as its line."""
    if isinstance(message, Go):
        return "go\n"
    if isinstance(message, End):
        return "\n"
    if isinstance(message, Job):
        fields = {**message.job.to_dict(), "sent_at": message.sent_at, "gated": message.gated}
    elif isinstance(message, Start):
        fields = {"config": message.config.to_dict(), "warm_device": message.warm_device,
                  "started_at": message.started_at}
    elif isinstance(message, Footprint):
        fields = {"footprint": dataclasses.asdict(message)}
    else:
        field = FIELDS.get(type(message))
        fields = {KEYS[type(message)]: getattr(message, field) if field else True}
    return json.dumps(fields) + "\n"


KEYS = {Outcome: "result", ReadyToWarm: "ready_to_warm", Warmed: "warmed", Stage: "stage", Workers: "workers",
        Footprint: "footprint", Warm: "warm"}  # in the order a line is recognised
FIELDS = {Workers: "pids", Stage: "name", Outcome: "result"}


def from_runner(line: str):
    """A judge's stdin line as a message; ValueError for anything else."""
    if not line.strip():
        return End()
    if line.strip() == "go":
        return Go()
    fields = json_object(line)
    if "sent_at" in fields:  # a Job (Start carries a config too)
        job = PairJob.from_dict({k: v for k, v in fields.items() if k not in ("sent_at", "gated")})
        return Job(job, fields["sent_at"], bool(fields.get("gated")))
    if "started_at" in fields:
        return Start(Config.from_dict(fields["config"]), fields.get("warm_device"), fields["started_at"])
    if fields.get("warm"):
        return Warm()
    raise ValueError(f"not a message of the runner's: {line[:100]!r}")


def next_from_runner():
    """The runner's next message (End when stdin closed)."""
    return from_runner(sys.stdin.readline())


def from_judge(line: str):
    """A judge's line as a message; None for another JSON object; ValueError for none."""
    fields = json_object(line)
    for kind, key in KEYS.items():
        if key in fields and kind is not Warm:
            if kind is Workers and not isinstance(fields[key], list):
                return None
            if kind is Footprint:
                return Footprint(int(fields[key]["need_mb"]), int(fields[key]["device_mb"]),
                                 bool(fields[key]["crowded"]))
            return kind(fields[key]) if kind in FIELDS else kind()
    return None


def json_object(line: str) -> dict:
    fields = json.loads(line)
    if not isinstance(fields, dict):
        raise ValueError(f"expected a JSON object, got {line[:100]!r}")
    return fields
