"""The embedder fine-tune (`python -m training.embedder`) end to end on a few requests: a LoRA adapter that
`load_embedder` takes, moved away from the stock model, with its provenance (slow: the real MiniLM)."""

import json

import numpy as np
import pytest

from toolbank import load_embedder
from training import embedder
from training.cli import run

pytestmark = pytest.mark.slow


def test_fine_tune_writes_an_adapter_that_loads_and_embeds(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTOOL_HOME", str(tmp_path / "home"))
    out = tmp_path / "tuned"
    argv = ["--out", str(out), *"--catalogs metatool:train --per-catalog 16 --batch-size 8 --lr 1e-3".split()]
    assert run(embedder.main, argv) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["trained_on"][0]["catalog"] == "metatool" and manifest["trained_on"][0]["split"] == "train"
    assert manifest["triples"] >= 16 and manifest["steps"] == 2 and manifest["examples_per_s"] > 0
    adapter = out / "adapter"
    assert json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"] == (
        "sentence-transformers/all-MiniLM-L6-v2"
    )
    tuned, stock = load_embedder(str(adapter)), load_embedder("stock")
    assert tuned.id == str(adapter.resolve()) and tuned.dim == stock.dim == 384
    texts = ["convert a pdf to text", "what is the weather in Paris"]
    a, b = tuned.encode(texts, progress=True), stock.encode(texts, progress=True)  # the PyTorch path
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    cosines = (a * b).sum(axis=1)
    assert (cosines < 0.99999).all() and (cosines > 0.5).all()  # moved, not destroyed
    assert np.allclose(tuned.encode(texts[:1]), a[:1], atol=1e-5)  # the ONNX query path agrees


def test_name_word_dropout_takes_the_gold_tools_name_out_of_its_requests():
    plain, _ = embedder.triples("seal_tools", limit=24)
    rows, record = embedder.triples("seal_tools", limit=24, name_word_dropout=1.0)
    assert [r[1:] for r in rows] == [r[1:] for r in plain]  # the same tools and negatives
    assert record["name_words_dropped"] > 0
    changed = [(row[0], original[0]) for row, original in zip(rows, plain) if row[0] != original[0]]
    assert len(changed) == record["name_words_dropped"]
    assert all(len(r.split()) < len(o.split()) for r, o in changed)


def test_the_same_seed_trains_the_same_adapter(tmp_path, monkeypatch):
    """`make train-embedder` must reproduce the shipped adapter: its random start is seeded too, not only the
    trainer's run (before, two runs with seed 0 shared no LoRA weight)."""
    from safetensors.numpy import load_file

    monkeypatch.setenv("AUTOTOOL_HOME", str(tmp_path / "home"))
    adapters = []
    for i in range(2):
        out = tmp_path / f"run{i}"
        argv = ["--out", str(out), *"--catalogs metatool:train --per-catalog 8 --batch-size 8 --seed 0".split()]
        assert run(embedder.main, argv) == 0
        adapters.append(load_file(out / "adapter" / "adapter_model.safetensors"))
    first, second = adapters
    assert first.keys() == second.keys() and any("lora_A" in k for k in first)
    assert all(np.array_equal(first[k], second[k]) for k in first)
