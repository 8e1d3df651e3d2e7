import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from training import phase1, phase2
from training.config import ConfigError, InvalidValue, as_dict, keys, load, show
from training.phase1 import Phase1Config
from training.phase2 import Phase2Config

CONFIGS = Path(__file__).parents[2] / "training" / "configs"
DEFAULTS = {"phase1": Phase1Config, "phase2": Phase2Config}
SHIPPED = sorted(CONFIGS.glob("*.yaml"))
# per section a shipped file may set: a key and a value its config refuses, and what the error says
REFUSED = {
    "": ("checkpoint_every", 0, "must be at least 1, got 0"),
    "sft": ("steps", -1, "must be at least 0, got -1"),
    "grpo": ("chunk", 0, "must be at least 1, got 0"),
    "rank": ("candidates", 1, "must be at least 2, got 1"),
    "eval": ("mode", "slow", "must be one of reason, fast; got 'slow'"),
}


def flat(data: dict, prefix: str = "") -> dict:
    return {
        k: v
        for key, value in data.items()
        for k, v in (flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {prefix + key: value}).items()
    }


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_config_builds_into_its_class_with_its_values(path):
    default = DEFAULTS[path.stem.split("-")[0]]
    config = load(default(), path)
    assert type(config) is default
    assert dataclasses.replace(config) == config  # constructed again: its __post_init__ checks pass
    built = flat(as_dict(config))
    for key, value in flat(yaml.safe_load(path.read_text())).items():
        assert built[key] == value, key  # every key of the file reached the config


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_an_invalid_value_in_a_shipped_config_is_an_error_that_names_the_key_and_the_file(path, tmp_path):
    data = yaml.safe_load(path.read_text())
    sections = [""] + [name for name in REFUSED if isinstance(data.get(name), dict)]
    assert len(sections) > 1  # every shipped file sets a section
    for section in sections:
        key, value, says = REFUSED[section]
        broken = yaml.safe_load(path.read_text())
        (broken[section] if section else broken)[key] = value
        bad = tmp_path / path.name
        bad.write_text(yaml.safe_dump(broken))
        dotted = f"{section}.{key}" if section else key
        with pytest.raises(InvalidValue, match=f"^{re.escape(f'{bad}: {dotted} {says}')}$") as raised:
            load(DEFAULTS[path.stem.split("-")[0]](), bad)
        assert raised.value.key == dotted


def test_shipped_configs_cover_both_phases():
    assert {p.stem.split("-")[0] for p in CONFIGS.glob("*.yaml")} == set(DEFAULTS)


def test_overrides_reach_nested_keys_and_parse_values_as_yaml():
    config = load(
        Phase1Config(),
        None,
        [
            "--sft.steps",
            "3",
            "--grpo.reward.select",
            "0.5",
            "--sft.lr",
            "1e-4",
            "--stages",
            "[grpo]",
            "--out",
            "runs/x",
        ],
    )
    assert config.sft.steps == 3 and config.grpo.reward.select == 0.5 and config.sft.lr == 1e-4
    assert config.stages == ["grpo"] and config.out == "runs/x"
    assert Phase1Config().sft.steps != 3  # the default is untouched


def test_unknown_key_is_named_with_its_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("sft:\n  stepz: 3\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: unknown key 'sft.stepz'; expected one of sft.steps"):
        load(Phase1Config(), path)


def test_wrong_type_is_named():
    with pytest.raises(ConfigError, match=r"command line: key 'grpo.group' must be int, got 'four'"):
        load(Phase1Config(), None, ["--grpo.group", "four"])
    with pytest.raises(ConfigError, match="command line: sft must be a mapping"):
        load(Phase1Config(), None, ["--sft", "3"])


def test_bad_yaml_and_missing_file_are_named(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("sft: [unclosed\n")
    with pytest.raises(ConfigError, match="broken.yaml is not valid YAML"):
        load(Phase1Config(), path)
    with pytest.raises(ConfigError, match="cannot read config .*missing.yaml"):
        load(Phase1Config(), tmp_path / "missing.yaml")


def test_overrides_come_in_pairs():
    with pytest.raises(ConfigError, match="pairs"):
        load(Phase1Config(), None, ["--sft.steps"])


def test_values_are_checked_after_the_overrides_with_the_key_and_where_it_was_set(tmp_path):
    with pytest.raises(InvalidValue, match=r"^command line: grpo.chunk must be at least 1, got 0$"):
        load(Phase1Config(), CONFIGS / "phase1.yaml", ["--grpo.chunk", "0"])
    with pytest.raises(InvalidValue, match=r"^command line: rank.chunk must be at least 1, got -1$"):
        load(Phase2Config(), CONFIGS / "phase2.yaml", ["--rank.chunk", "-1"])
    with pytest.raises(ConfigError, match=r"^command line: stages must be a list of sft, grpo; got \['sft', 'dpo'\]$"):
        load(Phase1Config(), None, ["--stages", "[sft, dpo]"])
    with pytest.raises(ConfigError, match=r"^command line: stages must be \[rank\]"):
        load(Phase2Config(), None, ["--stages", "[sft]"])
    with pytest.raises(ConfigError, match=r"^command line: grpo.reward.select must be at least 0, got -1.0$"):
        load(Phase1Config(), None, ["--grpo.reward.select", "-1"])
    with pytest.raises(ConfigError, match=r"^command line: eval.splits must name query splits .*; got 'tests'$"):
        load(Phase1Config(), None, ["--eval.splits", "[val, tests]"])
    with pytest.raises(ConfigError, match=r"^command line: anchor must be one of residual, pure; got 'mixed'$"):
        load(Phase1Config(), None, ["--anchor", "mixed"])
    # a file may hold a value that only the overrides make valid: the config is built once, from both
    path = tmp_path / "half.yaml"
    path.write_text("grpo:\n  chunk: 0\n  group: 1\n")
    with pytest.raises(InvalidValue, match=f"^{re.escape(str(path))}: grpo.chunk must be at least 1, got 0$"):
        load(Phase1Config(), path)
    config = load(Phase1Config(), path, ["--grpo.chunk", "2", "--grpo.group", "3"])
    assert (config.grpo.chunk, config.grpo.group) == (2, 3)


def test_a_config_section_built_directly_checks_its_values():
    with pytest.raises(InvalidValue, match=r"^chunk must be at least 1, got 0$"):
        phase1.GRPOConfig(chunk=0)
    with pytest.raises(InvalidValue, match=r"^group must be at least 2, got 1$"):
        phase1.GRPOConfig(group=1)
    with pytest.raises(InvalidValue, match=r"^epsilon must be between 0 and 1, got 1.5$"):
        phase1.GRPOConfig(epsilon=1.5)
    with pytest.raises(InvalidValue, match=r"^updates_per_batch must be at least 1, got 0$"):
        phase1.GRPOConfig(updates_per_batch=0)
    with pytest.raises(InvalidValue, match=r"^candidates must be at least 2, got 1$"):
        phase2.RankConfig(candidates=1)
    with pytest.raises(InvalidValue, match=r"^checkpoint_every must be at least 1, got 0$"):
        Phase1Config(checkpoint_every=0)
    assert isinstance(InvalidValue("x", "is wrong"), ValueError)


def config_classes(cls, seen=None) -> list:
    seen = [] if seen is None else seen
    if cls not in seen:
        seen.append(cls)
        for f in dataclasses.fields(cls):
            if dataclasses.is_dataclass(getattr(cls(), f.name)):
                config_classes(type(getattr(cls(), f.name)), seen)
    return seen


@pytest.mark.parametrize("default", list(DEFAULTS.values()), ids=lambda c: c.__name__)
def test_every_config_field_has_help(default):
    for cls in config_classes(default):
        for f in dataclasses.fields(cls):
            assert f.metadata.get("help"), f"{cls.__name__}.{f.name} has no metadata help"


@pytest.mark.parametrize(
    "module, default, sample",
    [
        (phase1, Phase1Config, "--sft.steps int optimizer steps [default: 60]"),
        (phase2, Phase2Config, "--rank.candidates int rollouts per query (N), ranked against each other [default: 8]"),
    ],
    ids=["phase1", "phase2"],
)
def test_help_lists_every_config_key_with_its_type_default_and_help(module, default, sample, capsys):
    assert module.main(["--help"]) == 0
    out = capsys.readouterr().out
    joined, bare = " ".join(out.split()), "".join(out.split())  # as wrapped to the terminal, joined again
    listed = list(keys(default()))
    assert len(listed) == len({k for k, *_ in listed}) > 25
    for key, kind, value, text in listed:
        assert f"--{key} {kind} " in joined, key
        assert "".join(f"{text} [default: {show(value)}]".split()) in bare, key  # hyphens may break a line
    assert sample in joined
    assert "--grpo.reward.select float" in joined or module is phase2
    assert "--rank.reward.select float" in joined or module is phase1
    assert "--eval.splits list" in joined and "--config PATH" in joined


def test_the_command_line_exits_2_with_the_key_before_any_work(capsys):
    assert phase1.main(["--config", str(CONFIGS / "phase1.yaml"), "--grpo.beta", "-0.5"]) == 2
    assert "command line: grpo.beta must be at least 0, got -0.5" in capsys.readouterr().err
    assert phase2.main(["--rank.candidates", "1", "--init", "x"]) == 2
    assert "command line: rank.candidates must be at least 2, got 1" in capsys.readouterr().err
    assert phase1.main(["--config", str(CONFIGS / "no-such.yaml")]) == 2
    assert "cannot read config" in capsys.readouterr().err
    assert phase1.main(["--sft.steps"]) == 2
    assert "pairs" in capsys.readouterr().err
