"""Training configs: nested dataclasses, filled from a YAML file and then `--key value` overrides.

Every key must be known and of its default's type: a typo or a wrong type is a `ConfigError` that names
the key and where it came from. Dotted keys reach into sections: `--sft.steps 10`. Each field documents
itself (`metadata={"help": ...}`, listed by `keys` for `--help`), and each config class checks its values
in `__post_init__` (`InvalidValue`, naming the key): `load` applies the file and the overrides, then builds
the dataclasses, so a bad value is an error wherever it came from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """A config key is unknown, of the wrong type, or out of range, or the file is not YAML."""


class InvalidValue(ConfigError):
    """A value of the right type that its config does not accept. `key` is dotted from the top config once
    `load` has placed it (a section checked on its own names its own field)."""

    def __init__(self, key: str, problem: str, where: str = ""):
        self.key, self.problem, self.where = key, problem, where
        super().__init__(f"{where + ': ' if where else ''}{key} {problem}")

    def within(self, prefix: str = "", where: str = "") -> InvalidValue:
        return InvalidValue(prefix + self.key, self.problem, where or self.where)


def require(ok: bool, key: str, problem: str) -> None:
    """`InvalidValue(key, problem)` unless `ok`: for `__post_init__` checks."""
    if not ok:
        raise InvalidValue(key, problem)


def at_least(config, low: float, *names: str) -> None:
    """Each field of `names` is at least `low`."""
    for name in names:
        value = getattr(config, name)
        require(value >= low, name, f"must be at least {low}, got {value!r}")


def positive(config, *names: str) -> None:
    """Each field of `names` is above 0."""
    for name in names:
        value = getattr(config, name)
        require(value > 0, name, f"must be above 0, got {value!r}")


def one_of(config, name: str, choices: Iterable[str]) -> None:
    value, choices = getattr(config, name), tuple(choices)
    require(value in choices, name, f"must be one of {', '.join(choices)}; got {value!r}")


def _check(value: Any, default: Any, key: str, where: str) -> Any:
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        if isinstance(value, str):  # YAML reads `1e-4` (no dot) as a string
            try:
                value = float(value)
            except ValueError:
                pass
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, (list, tuple)):
        ok = isinstance(value, list)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise ConfigError(f"{where}: key {key!r} must be {type(default).__name__}, got {value!r}")
    return value


def _checked(config, data: dict, where: str, prefix: str = "", sources: dict | None = None) -> dict:
    """`data` with its keys checked against the dataclass `config` and its values against their defaults'
    types (floats converted); records in `sources` where each dotted key was set."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: {prefix.rstrip('.') or 'the config'} must be a mapping of keys to values")
    fields = {f.name for f in dataclasses.fields(config)}
    out = {}
    for key, value in data.items():
        full = prefix + str(key)
        if key not in fields:
            raise ConfigError(
                f"{where}: unknown key {full!r}; expected one of "
                f"{', '.join(prefix + f.name for f in dataclasses.fields(config))}"
            )
        current = getattr(config, key)
        if dataclasses.is_dataclass(current):
            out[key] = _checked(current, value, where, full + ".", sources)
        else:
            out[key] = _check(value, current, full, where)
            if sources is not None:
                sources[full] = where
    return out


def _build(config, changes: dict, prefix: str = ""):
    """A copy of the dataclass `config` with `changes` (checked, nested dicts for sections) set: every section
    changed, then `config` itself, is constructed anew, so each `__post_init__` checks the values it gets."""
    replaced = {
        key: _build(getattr(config, key), value, f"{prefix}{key}.")
        if isinstance(value, dict) and dataclasses.is_dataclass(getattr(config, key))
        else value
        for key, value in changes.items()
    }
    try:
        return dataclasses.replace(config, **replaced)
    except InvalidValue as e:  # a section's error arrives placed already: it is raised outside this `try`
        raise e.within(prefix) from None


def _nest(key: str, value: Any) -> dict:
    for part in reversed(key.split(".")[1:]):
        value = {part: value}
    return {key.split(".")[0]: value}


def _deep_update(target: dict, update: dict) -> dict:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = value
    return target


def load(default, path: str | Path | None = None, overrides: Sequence[str] = ()):
    """`default` updated from the YAML file at `path`, then from `["--key", "value", ...]` (values parsed as YAML).

    Keys and types are checked source by source; then the config is built once from both, so its checks see
    the overrides (a file may leave a value for the command line to give). A value out of range is an
    `InvalidValue` naming its key and where it was set."""
    changes: dict = {}
    sources: dict[str, str] = {}
    if path is not None:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except OSError as e:
            raise ConfigError(f"cannot read config {path}: {e.strerror}") from None
        except yaml.YAMLError as e:
            raise ConfigError(f"{path} is not valid YAML: {e}") from None
        changes = _checked(default, data, str(path), "", sources)
    if len(overrides) % 2 or any(not key.startswith("--") for key in overrides[::2]):
        raise ConfigError(f"overrides must be pairs `--key value`, got {' '.join(overrides)!r}")
    data: dict = {}
    for key, value in zip(overrides[::2], overrides[1::2]):
        _deep_update(data, _nest(key[2:].replace("-", "_"), yaml.safe_load(value)))
    _deep_update(changes, _checked(default, data, "command line", "", sources))
    try:
        return _build(default, changes)
    except InvalidValue as e:
        raise e.within(where=sources.get(e.key, "config")) from None


def as_dict(config) -> dict:
    return dataclasses.asdict(config)


def keys(config, prefix: str = "") -> Iterator[tuple[str, str, Any, str]]:
    """(dotted key, type name, default, help) of every field of the dataclass `config`, sections expanded in place."""
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if dataclasses.is_dataclass(value):
            yield from keys(value, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", type(value).__name__, value, f.metadata.get("help", "")


def show(value: Any) -> str:
    """A value as it is written on the command line (YAML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if isinstance(value, str):
        return value if value else '""'
    return repr(value)
