"""A cold `toolbank search` loads only what it needs (issue #24): the BM25 index saved in the bank (queried
without bm25s, with bm25s's scores), the embedder's ONNX export without PyTorch, no jsonschema; and
`toolbank serve --preload` loads before it reads a request, quietly. Timings: bench/bench_cli.py."""

import json
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import DATA, weather_tools

from toolbank import HashEmbedder, Tool, ToolBank, load_file
from toolbank.search import BM25Index

HEAVY = ("torch", "transformers", "sentence_transformers", "bm25s", "scipy", "jsonschema", "referencing")


def _bm25s_scores(texts, queries):
    """The scores bm25s itself gives (the code toolbank used before it saved its index)."""
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    out = []
    for query in queries:
        tokens = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        tokens = [t for t in tokens if t in retriever.vocab_dict]
        out.append(
            np.asarray(retriever.get_scores(tokens), dtype=np.float32) if tokens else np.zeros(len(texts), np.float32)
        )
    return out


def test_bm25_scores_are_those_of_bm25s_and_survive_saving(tmp_path):
    texts = [t.text for t in load_file(DATA / "metatool" / "tools.jsonl")[0]]
    queries = [json.loads(line)["query"] for line in open(DATA / "metatool" / "queries.jsonl")]
    queries = random.Random(0).sample(queries, 300) + [
        "",
        "the and of a",
        "weather weather WEATHER",
        "ÀÉ 中文 café",
        "x",
        "pdf-to-text_converter 2024",
    ]
    index = BM25Index(list(range(10, 10 + len(texts))), texts)
    index.save(tmp_path / "bm25.npz", generation=7)
    loaded = BM25Index.load(tmp_path / "bm25.npz", 7, len(texts))
    for query, expected in zip(queries, _bm25s_scores(texts, queries), strict=True):
        assert np.array_equal(index.scores(query), expected), query
        assert np.array_equal(loaded.scores(query), expected), query
    assert BM25Index.load(tmp_path / "bm25.npz", 8, len(texts)) is None  # another generation
    assert BM25Index.load(tmp_path / "bm25.npz", 7, len(texts) + 1) is None
    data = bytearray((tmp_path / "bm25.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "bm25.npz").write_bytes(bytes(data))
    assert BM25Index.load(tmp_path / "bm25.npz", 7, len(texts)) is None  # damaged: rebuilt by the bank


def test_bank_saves_its_bm25_index_and_rebuilds_a_stale_or_damaged_one(tmp_path, monkeypatch):
    bank = ToolBank.create(tmp_path / "bank", HashEmbedder(64))
    bank.add(weather_tools())
    expected = [(h.name, h.score) for h in bank.search("weather forecast city", mode="bm25")]
    assert (tmp_path / "bank" / "bm25.npz").is_file()

    def no_build(*args, **kwargs):
        raise AssertionError("built the BM25 index instead of loading bm25.npz")

    with monkeypatch.context() as m:
        m.setattr(BM25Index, "__init__", no_build)
        again = ToolBank.load(tmp_path / "bank", HashEmbedder(64))
        assert [(h.name, h.score) for h in again.search("weather forecast city", mode="bm25")] == expected
    again.add([Tool("city_weather", "Weather in a city, now")])  # a new generation: bm25.npz is stale
    third = ToolBank.load(tmp_path / "bank", HashEmbedder(64))
    assert "city_weather" in [h.name for h in third.search("weather city", mode="bm25")]
    (tmp_path / "bank" / "bm25.npz").write_bytes(b"not a zip")
    fourth = ToolBank.load(tmp_path / "bank", HashEmbedder(64))
    assert [h.name for h in fourth.search("weather city", mode="bm25")] == [
        h.name for h in third.search("weather city", mode="bm25")
    ]
    assert BM25Index.load(tmp_path / "bank" / "bm25.npz", fourth.store.generation, len(fourth)) is not None


def test_a_search_leaves_bm25_npz_to_a_later_process_while_a_writer_holds_the_lock(tmp_path):
    import fcntl

    bank = ToolBank.create(tmp_path / "bank", HashEmbedder(64))
    bank.add(weather_tools())
    saved = tmp_path / "bank" / "bm25.npz"
    assert not saved.exists()  # the first search builds it
    with open(tmp_path / "bank" / "bank.lock", "a") as lock:  # a writer at work: it will change the store
        fcntl.flock(lock, fcntl.LOCK_EX)
        names = [h.name for h in ToolBank.load(tmp_path / "bank", HashEmbedder(64)).search("weather", mode="bm25")]
        assert names and not saved.exists()
        fcntl.flock(lock, fcntl.LOCK_UN)
    ToolBank.load(tmp_path / "bank", HashEmbedder(64)).search("weather", mode="bm25")
    assert saved.is_file()


def _modules_after(argv: list[str], env=None) -> list[str]:
    code = (
        "import sys; from toolbank.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        f"print('MODULES', sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.rsplit("MODULES", 1)[1].strip().replace("'", '"'))


def test_a_cold_search_imports_no_model_library_nor_bm25s(tmp_path):
    bank = ToolBank.create(tmp_path / "bank", "hash:64")
    bank.add(weather_tools())
    bank.warm()
    for mode in ("bm25", "dense", "hybrid"):
        assert _modules_after(["--bank", str(bank.path), "search", "weather in paris", "--mode", mode]) == []


def _tiny_sentence_transformer(folder: Path) -> Path:
    """A 2-layer, 32-wide BERT with mean pooling and normalisation, as sentence-transformers 6 saves it."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sentence_transformers.models is deprecated, and still there
        from sentence_transformers import SentenceTransformer, models

    raw = folder.with_name("raw")
    raw.mkdir()
    words = "weather forecast city convert pdf text send email message paris rain document".split()
    letters = list("abcdefghijklmnopqrstuvwxyz")
    (raw / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words + letters + ["##" + c for c in letters]) + "\n"
    )
    BertTokenizerFast(vocab_file=str(raw / "vocab.txt")).save_pretrained(raw)
    torch.manual_seed(0)
    BertModel(
        BertConfig(
            vocab_size=70,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
        )
    ).save_pretrained(raw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        SentenceTransformer(
            modules=[models.Transformer(str(raw), max_seq_length=48), models.Pooling(32, "mean"), models.Normalize()]
        ).save(str(folder))
    return folder


def test_queries_run_on_the_onnx_export_without_pytorch_once_it_exists(tmp_path):
    from toolbank.embed import SentenceTransformerEmbedder

    folder = _tiny_sentence_transformer(tmp_path / "tiny")
    texts = ["weather in paris", "convert pdf text " * 40, "", "  send email  "]
    embedder = SentenceTransformerEmbedder(folder)
    assert embedder.dim == 32 and not embedder.loaded  # read from the configuration
    short = np.stack([embedder.encode([t])[0] for t in texts])  # exports it (needs PyTorch, once)
    reference = embedder.model.encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(short, reference, atol=1e-6)
    exports = list((Path(os.environ["AUTOTOOL_HOME"]) / "models" / "onnx").glob("tiny-*/export.json"))
    assert len(exports) == 1 and json.loads(exports[0].read_text())["tokenizer_matches"]
    assert {p.name for p in exports[0].parent.iterdir()} == {"export.json", "model.onnx", "model.onnx.data"}

    code = (
        "import sys, json; from toolbank.embed import SentenceTransformerEmbedder\n"
        f"e = SentenceTransformerEmbedder({str(folder)!r})\n"
        f"v = [e.encode([t])[0].tolist() for t in {texts!r}] + e.encode({texts!r}).tolist()\n"
        "print(json.dumps({'torch': 'torch' in sys.modules or 'sentence_transformers' in sys.modules, 'v': v}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    answer = json.loads(out.stdout)
    assert answer["torch"] is False
    np.testing.assert_allclose(np.array(answer["v"]), np.concatenate([short, short]), atol=1e-6)


def _requests(call: dict) -> list[dict]:
    """An MCP session over stdio in JSON-RPC: initialize, then one tools/call."""
    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
    ]


def test_serve_preload_loads_before_reading_a_request_and_stderr_stays_quiet(tmp_path):
    bank = ToolBank.create(tmp_path / "bank", "hash:64")
    bank.add(weather_tools())
    assert not (tmp_path / "bank" / "bm25.npz").exists()  # the server builds it: bm25s logs DEBUG lines then
    argv = [sys.executable, "-m", "toolbank", "--bank", str(bank.path), "serve", "--preload"]
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = process.stderr.readline()  # written before the server reads its input: nothing has been sent yet
    assert first.startswith(f"ready: serving {bank.path} (4 tools) over stdio; read-only; indexes and embedder loaded")
    assert (tmp_path / "bank" / "bm25.npz").is_file()  # built by --preload, before any request
    for request in _requests({"name": "search_tools", "arguments": {"query": "weather in Paris", "k": 2}}):
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline()) if "id" in request else None
    assert json.loads(answer["result"]["content"][0]["text"])["tools"][0]["name"] == "weather/get_weather"
    process.stdin.close()
    err = process.stderr.read()
    process.wait(timeout=30)
    assert "DEBUG" not in err and "it/s" not in err and "%|" not in err, err
    assert first.count("\n") == 1 and err.strip() == "", err  # the ready line was the only line


@pytest.mark.parametrize("flag", ["--preload", "--verbose"])
def test_serve_help_lists_the_flag(flag):
    out = subprocess.run([sys.executable, "-m", "toolbank", "serve", "--help"], capture_output=True, text=True)
    assert flag in out.stdout


def test_creating_a_bank_with_the_default_embedder_merges_nothing_and_imports_no_torch(tmp_path):
    """The default embedder is the shipped adapter over all-MiniLM-L6-v2; it is merged on first embedding."""
    code = (
        "import json, sys\n"
        "from toolbank import DEFAULT_EMBEDDER, ToolBank\n"
        "bank = ToolBank.create(sys.argv[1])\n"
        f"print(json.dumps([bank.embedder_id, bank.dim, [m for m in {HEAVY!r} if m in sys.modules]]))\n"
    )
    env = {**os.environ, "AUTOTOOL_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "bank")], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["autotool/all-MiniLM-L6-v2-tools", 384, []]
    assert not (tmp_path / "home" / "models" / "merged").exists()
