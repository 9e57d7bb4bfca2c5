"""Run configuration: configs/default.yaml < --config FILE < flags, validated."""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Optional

import yaml

from harness.common.errors import UserError

# `constructed`: as __init__ leaves them (KernelBench's); `eval`: eval mode, random BatchNorm statistics.
MODES = ("constructed", "eval")

# configs/ in a checkout; installed with pip, the copy the package holds (configs here links to it in a checkout).
CHECKOUT_CONFIGS = Path(__file__).resolve().parents[2] / "configs"
CONFIGS = CHECKOUT_CONFIGS if (CHECKOUT_CONFIGS / "default.yaml").is_file() else Path(__file__).with_name("configs")
DEFAULT_PATH = CONFIGS / "default.yaml"
DTYPES = ("float32", "float16", "bfloat16", "float64")
# Where files go, not what is measured: not hashed.
UNHASHED = ("results_dir", "build_cache_dir", "peaks_cache_dir", "output_limit_bytes", "preset")  # a preset: its values


class ConfigError(UserError):
    """A bad configuration; the CLI exits 2."""


class Section:
    """A part of the Config; a copy with changes is `replace`."""

    def replace(self, **changes):
        """A copy with some of this section's settings changed, not validated again."""
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class Limits(Section):
    """How long a process may take, and how much it may say."""

    timeout: float  # seconds per worker request
    compile_timeout: int
    start_timeout: int
    kill_grace_s: int
    output_limit_bytes: int


@dataclasses.dataclass(frozen=True)
class Correctness(Section):
    """The trials, their inputs and seeds, and what passes."""

    trials: int
    wide_trials: int
    wide_input_scale: float
    init_seed: int
    tolerances: dict  # {dtype: {atol, rtol}}
    problem_tolerances: dict  # {problem: {atol, rtol}}
    fp64_truth: bool
    fp64_memory_fraction: float
    truth_accuracy_factor: float
    reduced_precision_ratio: float
    compare_chunk_elems: int

    @property
    def total_trials(self) -> int:
        """Ordinary and wide correctness trials."""
        return self.trials + self.wide_trials


@dataclasses.dataclass(frozen=True)
class Timing(Section):
    """How the rounds are run and when they stop."""

    warmup: int
    min_rounds: int
    max_rounds: int
    target_ci_pct: float
    cpu_target_ci_pct: float
    min_timing_s: float
    max_timing_s: float
    gate_timing_s: float
    gpu_probe_ms: float
    gpu_drain_s: float
    interference_rounds: int
    cold_cache: bool
    launch_lead_us: float
    workers_share_cpu: bool
    compile_baseline: bool


@dataclasses.dataclass(frozen=True)
class Resolution(Section):
    """The least difference a speedup may claim, and how a claim is confirmed on fresh workers."""

    timing_resolution_pct: float
    batched_resolution_pct: float
    cpu_resolution_pct: float
    host_bound_resolution_pct: float
    host_bound_spread_pct: float
    gpu_resolution_pct: dict  # {part of a GPU's name: percent}
    process_band_pct: float
    process_blocks: int
    replace_pad_mb: int
    excessive_speedup: float


@dataclasses.dataclass(frozen=True)
class Builds(Section):
    """Where extensions are built and cached, and how many at once."""

    build_cache_dir: str
    prebuild: str
    build_workers: int


@dataclasses.dataclass(frozen=True)
class Scheduling(Section):
    """How a run spreads its pairs, and where it writes."""

    judges_ahead: int
    peaks_cache_dir: str
    results_dir: str


SECTIONS = {"limits": Limits, "correctness": Correctness, "timing": Timing, "resolution": Resolution,
            "builds": Builds, "scheduling": Scheduling}


@dataclasses.dataclass(frozen=True)
class Config:
    """The run's settings in sections, validated once; their meanings and defaults: configs/default.yaml (flat keys)."""

    device: str
    mode: str  # MODES
    precision: str  # PRECISIONS
    preset: str  # default, or a file of configs/presets/ layered over the defaults
    limits: Limits
    correctness: Correctness
    timing: Timing
    resolution: Resolution
    builds: Builds
    scheduling: Scheduling

    def replace(self, **changes) -> "Config":
        """A copy with some settings (flat keys) changed, not validated again."""
        return Config.from_dict({**self.to_dict(), **changes})

    def to_dict(self) -> dict[str, Any]:
        """Flat, as configs/default.yaml names the keys and JSON carries them."""
        flat = {"device": self.device, "mode": self.mode, "precision": self.precision, "preset": self.preset}
        for name in SECTIONS:
            flat.update(dataclasses.asdict(getattr(self, name)))
        return flat

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "Config":
        """Back from to_dict(): every key, each in its section; an unknown key is a TypeError."""
        values = dict(values)
        sections = {name: section(**{f.name: values.pop(f.name) for f in dataclasses.fields(section)})
                    for name, section in SECTIONS.items()}
        return cls(**values, **sections)


def load_defaults() -> dict[str, Any]:
    """The defaults, from configs/default.yaml."""
    return read_yaml(DEFAULT_PATH)


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping; any failure a ConfigError."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"Config file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"Config file {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"Config file {path} must hold a mapping of keys to values")
    return data


def build_config(config_file: Optional[str] = None, overrides: Optional[dict] = None) -> Config:
    """Defaults < the preset's file < a YAML file < CLI overrides, validated."""
    config = load_defaults()
    layers = []
    if config_file:
        layers.append((f"config file {config_file}", read_yaml(Path(config_file))))
    layers.append(("command line", {k: v for k, v in (overrides or {}).items() if v is not None}))
    preset = next((layer["preset"] for _, layer in reversed(layers) if "preset" in layer), config["preset"])
    if preset != "default":
        layers.insert(0, (f"preset {preset}", read_preset(preset)))
    for origin, layer in layers:
        for key, value in layer.items():
            if key not in config:
                raise ConfigError(f"Unknown config key '{key}' in {origin}. {suggest(key, config)}")
            config[key] = validate_value(key, value, config[key], origin)
    checked = Config.from_dict(config)
    check_relations(checked)
    return checked


PRECISIONS = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}  # --precision -> torch dtype name


def presets() -> list[str]:
    """The presets a run may name: default, and configs/presets/*.yaml."""
    return ["default", *sorted(p.stem for p in (CONFIGS / "presets").glob("*.yaml"))]


def read_preset(name: Any) -> dict[str, Any]:
    """A preset's settings; an unknown name is a ConfigError that lists the known ones."""
    if name not in presets():
        raise ConfigError(f"Unknown preset {name!r}; known: {', '.join(presets())}")
    settings = read_yaml(CONFIGS / "presets" / f"{name}.yaml")
    if "preset" in settings:
        raise ConfigError(f"preset {name} names a preset itself")
    return settings


def suggest(word: str, choices) -> str:
    """'Did you mean ...?', or the valid names."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1)
    if close:
        return f"Did you mean '{close[0]}'?"
    return "Valid keys: " + ", ".join(sorted(choices))


def validate_value(key: str, value: Any, default: Any, origin: str) -> Any:
    """One value checked against its default's type and its key's rule."""
    if key == "tolerances":
        return validate_tolerances(value, default, origin)
    if key == "problem_tolerances":
        return validate_problem_tolerances(value, origin)
    if key == "gpu_resolution_pct":
        return validate_gpu_resolution(value, origin)
    if key == "device":
        return validate_device(value, origin)
    if key == "prebuild" and isinstance(value, bool):  # YAML reads a bare on/off as a boolean
        return "on" if value else "off"
    expected = type(default)
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if type(value) is not expected:
        raise ConfigError(
            f"Bad value for '{key}' in {origin}: {value!r} (expected {expected.__name__})"
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        raise ConfigError(f"Bad value for '{key}' in {origin}: {value!r} (must not be negative)")
    return value


def validate_device(value: Any, origin: str) -> str:
    """A device is auto, cpu, cuda or cuda:N."""
    if not isinstance(value, str) or not re.fullmatch(r"auto|cpu|cuda(:\d+)?", value):
        raise ConfigError(f"Bad value for 'device' in {origin}: {value!r} (expected auto, cpu, cuda or cuda:N)")
    return value


def validate_tolerance_pair(where: str, pair: Any, origin: str) -> dict[str, float]:
    """One {atol, rtol} of non-negative numbers."""
    if not isinstance(pair, dict) or set(pair) - {"atol", "rtol"}:
        raise ConfigError(f"Bad tolerance for {where} in {origin}: {pair!r} (expected {{atol: X, rtol: Y}})")
    out = {}
    for name, number in pair.items():
        if isinstance(number, bool) or not isinstance(number, (int, float)) or number < 0:
            raise ConfigError(f"Bad {name} for {where} in {origin}: {number!r} (expected a number >= 0)")
        out[name] = float(number)
    return out


def validate_tolerances(value: Any, default: dict, origin: str) -> dict:
    """Per-dtype tolerances, merged into the defaults."""
    if not isinstance(value, dict):
        raise ConfigError(f"Bad value for 'tolerances' in {origin}: expected a mapping of dtype to {{atol, rtol}}")
    merged = copy.deepcopy(default)
    for dtype, pair in value.items():
        if dtype not in DTYPES:
            raise ConfigError(f"Unknown dtype '{dtype}' in tolerances ({origin}); known: {', '.join(DTYPES)}")
        merged[dtype] = {**merged.get(dtype, {}), **validate_tolerance_pair(dtype, pair, origin)}
    return merged


def validate_problem_tolerances(value: Any, origin: str) -> dict:
    """Per-problem {atol, rtol} overrides."""
    if not isinstance(value, dict):
        raise ConfigError(f"Bad value for 'problem_tolerances' in {origin}: expected a mapping")
    return {str(name): validate_tolerance_pair(f"problem {name}", pair, origin) for name, pair in value.items()}


def validate_gpu_resolution(value: Any, origin: str) -> dict:
    """{part of a GPU's name: percent in [0, 10)}."""
    if not isinstance(value, dict):
        raise ConfigError(f"Bad value for 'gpu_resolution_pct' in {origin}: expected a mapping of GPU name to percent")
    out = {}
    for name, pct in value.items():
        if isinstance(pct, bool) or not isinstance(pct, (int, float)) or not 0 <= pct < 10:
            raise ConfigError(f"Bad resolution for GPU {name!r} in {origin}: {pct!r} (expected a number from 0 to 10)")
        out[str(name)] = float(pct)
    return out


def check_relations(config: Config) -> None:
    """Rules that tie two keys together."""
    if config.timing.min_rounds < 2:
        raise ConfigError("min_rounds must be at least 2 (a CI needs several rounds)")
    if config.timing.max_rounds < config.timing.min_rounds:
        raise ConfigError("max_rounds must be >= min_rounds")
    if config.correctness.total_trials < 1:
        raise ConfigError("trials + wide_trials must be at least 1")
    if config.limits.timeout <= 0 or config.limits.compile_timeout <= 0:
        raise ConfigError("timeout and compile_timeout must be positive")
    if not 0 < config.timing.target_ci_pct <= 50 or not 0 < config.timing.cpu_target_ci_pct <= 50:
        raise ConfigError("target_ci_pct and cpu_target_ci_pct must be above 0 and at most 50")
    for key in ("timing_resolution_pct", "batched_resolution_pct", "cpu_resolution_pct", "host_bound_resolution_pct"):
        if not 0 <= getattr(config.resolution, key) < 10:
            raise ConfigError(f"{key} must be at least 0 and under 10")
    resolution = config.resolution
    if resolution.process_blocks < 1 or resolution.process_band_pct < 0 or resolution.replace_pad_mb < 0:
        raise ConfigError("process_blocks must be at least 1; process_band_pct and replace_pad_mb at least 0")
    if config.resolution.host_bound_spread_pct <= 0:
        raise ConfigError("host_bound_spread_pct must be positive")
    if not 0 <= config.timing.launch_lead_us <= 100000:
        raise ConfigError("launch_lead_us must be from 0 to 100000")
    if config.scheduling.judges_ahead < 0:
        raise ConfigError("judges_ahead must be 0 or more")
    if config.precision not in PRECISIONS:
        raise ConfigError(f"Bad value for 'precision': {config.precision!r} (expected {', '.join(PRECISIONS)})")
    if config.mode not in MODES:
        raise ConfigError(f"Bad value for 'mode': {config.mode!r} (expected {' or '.join(MODES)})")
    if config.correctness.truth_accuracy_factor < 1:
        raise ConfigError("truth_accuracy_factor must be at least 1")
    if config.builds.prebuild not in ("auto", "on", "off"):
        raise ConfigError(f"Bad value for 'prebuild': {config.builds.prebuild!r} (expected auto, on or off)")


def tolerance_for(config: Config, problem: str, dtype: str) -> dict[str, float]:
    """One problem's tolerance for an output dtype (its own override wins)."""
    settings = config.correctness
    tolerance = settings.tolerances.get(dtype, settings.tolerances["float32"])
    return {**tolerance, **settings.problem_tolerances.get(problem, {})}


def config_hash(config: Config) -> str:
    """A short hash of every setting that can change a result."""
    relevant = {k: v for k, v in config.to_dict().items() if k not in UNHASHED}
    blob = json.dumps(relevant, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]
