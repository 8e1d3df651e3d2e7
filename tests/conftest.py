"""Shared fixtures. Fast tests use `HashEmbedder` (no model); `slow` tests load the shipped models."""

import json
from pathlib import Path

import pytest
from helpers import weather_tools

from toolbank import HashEmbedder, ToolBank


@pytest.fixture(scope="session")
def session_home(tmp_path_factory):
    return tmp_path_factory.mktemp("autotool-home")


@pytest.fixture(autouse=True)
def isolated_home(session_home, monkeypatch):
    """Tests never touch the user's ~/.cache/autotool: $AUTOTOOL_HOME is one temporary folder per session."""
    monkeypatch.setenv("AUTOTOOL_HOME", str(session_home))
    monkeypatch.delenv("AUTOTOOL_BANK", raising=False)


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(64)


@pytest.fixture
def bank(tmp_path, embedder) -> ToolBank:
    bank = ToolBank.create(tmp_path / "bank", embedder)
    bank.add(weather_tools())
    yield bank
    bank.close()


@pytest.fixture
def write_json(tmp_path):
    def write(name: str, data, raw: bytes | None = None) -> Path:
        path = tmp_path / name
        if raw is not None:
            path.write_bytes(raw)
        elif name.endswith(".jsonl"):
            path.write_text("".join(json.dumps(d) + "\n" for d in data))
        else:
            path.write_text(json.dumps(data))
        return path

    return write
