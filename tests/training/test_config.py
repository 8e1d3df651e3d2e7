from pathlib import Path

import pytest

from training.config import ConfigError, load
from training.phase1 import Phase1Config
from training.phase2 import Phase2Config

CONFIGS = Path(__file__).parents[2] / "training" / "configs"
DEFAULTS = {"phase1": Phase1Config, "phase2": Phase2Config}


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_loads(path):
    config = load(DEFAULTS[path.stem.split("-")[0]](), path)
    assert config.benchmark in ("metatool", "seal_tools")
    assert config.out.startswith("runs/")


def test_shipped_configs_cover_both_phases():
    assert {p.stem.split("-")[0] for p in CONFIGS.glob("*.yaml")} == set(DEFAULTS)


def test_overrides_reach_nested_keys_and_parse_values_as_yaml():
    config = load(Phase1Config(), None, ["--sft.steps", "3", "--grpo.reward.select", "0.5", "--sft.lr", "1e-4",
                                         "--stages", "[grpo]", "--out", "runs/x"])
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


def test_a_chunk_below_one_is_an_error_that_names_the_key():
    from training import phase1, phase2

    with pytest.raises(ConfigError, match=r"key 'grpo.chunk': .* at least 1; got 0"):
        phase1.Phase1(phase1.Phase1Config(grpo=phase1.GRPOConfig(chunk=0)))
    with pytest.raises(ConfigError, match=r"key 'rank.chunk': .* at least 1; got -1"):
        phase2.Phase2(phase2.Phase2Config(init="runs/x/policy-grpo", rank=phase2.RankConfig(chunk=-1)))
