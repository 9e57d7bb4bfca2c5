import dataclasses

import pytest

from harness.common.config import Config, ConfigError, build_config, config_hash, load_defaults, tolerance_for


def test_defaults_come_from_default_yaml():
    config = build_config()
    assert config.to_dict() == load_defaults()
    assert config.correctness.tolerances["float32"] == {"atol": 1e-4, "rtol": 1e-4}
    assert config.correctness.tolerances["float16"] == {"atol": 1e-2, "rtol": 1e-2}
    assert config.correctness.trials >= 5 and config.correctness.wide_trials >= 1


def test_precedence_defaults_then_file_then_cli(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("timeout: 30\ntrials: 7\n")
    config = build_config(str(path), {"timeout": 5})
    assert config.limits.timeout == 5  # CLI wins over the file
    assert config.correctness.trials == 7  # the file wins over the defaults
    assert config.timing.warmup == load_defaults()["warmup"]


def test_none_cli_values_do_not_override(tmp_path):
    assert build_config(None, {"timeout": None}).limits.timeout == load_defaults()["timeout"]


def test_unknown_key_suggests_the_right_one(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("timout: 3\n")
    with pytest.raises(ConfigError, match="Unknown config key 'timout'.*Did you mean 'timeout'"):
        build_config(str(path))


@pytest.mark.parametrize("text, message", [
    ("trials: five\n", "expected int"),
    ("trials: -1\n", "must not be negative"),
    ("device: gpu\n", "expected auto, cpu, cuda"),
    ("cold_cache: 3\n", "expected bool"),
    ("tolerances: {float8: {atol: 1}}\n", "Unknown dtype"),
    ("tolerances: {float32: {atol: -1}}\n", "expected a number >= 0"),
    ("problem_tolerances: {sigmoid: {tol: 1}}\n", "Bad tolerance"),
    ("max_rounds: 1\n", "max_rounds must be >= min_rounds"),
    ("batched_resolution_pct: 12\n", "batched_resolution_pct must be at least 0 and under 10"),
    ("host_bound_resolution_pct: 10\n", "host_bound_resolution_pct must be at least 0 and under 10"),
    ("host_bound_spread_pct: 0\n", "host_bound_spread_pct must be positive"),
    ("launch_lead_us: 100001\n", "launch_lead_us must be from 0 to 100000"),
    ("- a\n- b\n", "must hold a mapping"),
    ("a: [\n", "not valid YAML"),
])
def test_bad_values_are_config_errors(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        build_config(str(path))


def test_a_lead_that_covers_a_networks_launches_is_accepted(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("launch_lead_us: 30000\n")  # bench/config_probe.sh: level3 networks timed by the GPU's work alone
    assert build_config(str(path)).timing.launch_lead_us == 30000


def test_missing_config_file():
    with pytest.raises(ConfigError, match="not found"):
        build_config("no/such/file.yaml")


def test_partial_tolerances_merge_and_problem_override(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("tolerances: {float32: {atol: 1.0e-3}}\nproblem_tolerances: {mm: {rtol: 0.5}}\n")
    config = build_config(str(path))
    assert tolerance_for(config, "x", "float32") == {"atol": 1e-3, "rtol": 1e-4}
    assert tolerance_for(config, "mm", "float32") == {"atol": 1e-3, "rtol": 0.5}
    assert tolerance_for(config, "x", "float16") == {"atol": 1e-2, "rtol": 1e-2}


def test_config_hash_ignores_paths_but_not_measurement_knobs():
    base = build_config()
    assert config_hash(base) == config_hash(base.replace(results_dir="elsewhere"))
    assert config_hash(base) != config_hash(base.replace(trials=9))


def test_the_config_declares_every_key_of_default_yaml_in_its_section_with_its_type():
    """default.yaml's keys are flat; each is a field of one section (or of Config itself), in the file's order."""
    from harness.common.config import SECTIONS

    sections = [Config, *SECTIONS.values()]
    fields = {f.name: f.type for cls in sections for f in dataclasses.fields(cls) if f.name not in SECTIONS}
    defaults = load_defaults()
    assert list(fields) == list(defaults)  # the same keys, section by section as the file's headings group them
    assert {k: type(v).__name__ for k, v in defaults.items()} == fields
    config = build_config()
    assert config.timing.warmup == defaults["warmup"] and config.limits.timeout == defaults["timeout"]
    assert config.to_dict() == defaults  # flat again, as JSON carries it and config_hash reads it


def test_a_config_crosses_processes_as_json_and_comes_back_equal():
    import json
    config = build_config(None, {"trials": 3})
    assert Config.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.correctness.trials = 4


def test_a_preset_lies_under_the_config_file_and_the_flags(tmp_path):
    from harness.common.config import ConfigError, config_hash, presets

    assert presets() == ["default", "rl"]
    rl = build_config(None, {"preset": "rl"})
    assert (rl.preset, rl.correctness.trials, rl.timing.max_rounds) == ("rl", 2, 40)
    path = tmp_path / "mine.yaml"
    path.write_text("preset: rl\ntrials: 4\n")
    mine = build_config(str(path), {"max_rounds": 12})
    assert (mine.preset, mine.correctness.trials, mine.timing.max_rounds, mine.timing.min_rounds) == ("rl", 4, 12, 6)
    assert config_hash(rl) == config_hash(build_config(None, rl.to_dict() | {"preset": "default"}))  # values count
    with pytest.raises(ConfigError, match="known: default, rl"):
        build_config(None, {"preset": "fast"})
