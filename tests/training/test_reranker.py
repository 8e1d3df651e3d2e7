"""`--catalogs` of the embedder and reranker trainers: which training catalogs (and splits) their rows come from."""

import pytest
from click.testing import CliRunner

from training import embedder
from training.cli import CommandError
from training.embedder import parse_catalogs
from training.reranker import DEFAULT_CATALOGS, main


def test_default_reads_metatool_and_bfcl_whole_and_seal_tools_train_split():
    assert parse_catalogs(DEFAULT_CATALOGS) == [("metatool", True), ("bfcl", True), ("seal_tools", False)]


def test_the_embedder_reads_the_train_split_of_the_three_first_training_catalogs_by_default():
    assert parse_catalogs(embedder.DEFAULT_CATALOGS) == [("metatool", False), ("seal_tools", False), ("bfcl", False)]


def test_a_catalog_whose_train_split_holds_no_request_is_refused_with_the_spec_that_works():
    # every ComplexFuncBench request needs 2 to 7 of its 40 tools: none has them all among the seen ones
    with pytest.raises(CommandError, match="complexfuncbench:train gives no training requests.*complexfuncbench:all"):
        embedder.catalog_triples([("complexfuncbench", False)], seed=0, per_catalog=None, negatives=1)


def test_a_whole_catalog_that_yields_no_triple_is_refused_with_the_cause(monkeypatch):
    # with `:all` every request qualifies; only a want of hard negatives can leave none
    monkeypatch.setattr(embedder, "triples", lambda *args: ([], {"queries": 40, "triples": 0}))
    with pytest.raises(CommandError, match="complexfuncbench:all gives no training triples.*16 tools.*--negatives"):
        embedder.catalog_triples([("complexfuncbench", True)], seed=0, per_catalog=None, negatives=16)


def test_leave_one_out_spec():
    assert parse_catalogs("seal_tools:all, bfcl : all") == [("seal_tools", True), ("bfcl", True)]


@pytest.mark.parametrize(
    "spec, says",
    [
        ("apibank:all", "'apibank' is not a training catalog"),  # a foreign validation catalog is never trained on
        ("metatool", "expected the split 'all' or 'train'"),
        ("metatool:val", "expected the split 'all' or 'train'"),
        (" , ", "expected at least one catalog"),
        ("metatool:all,metatool:train", "'metatool' is named twice"),
    ],
)
def test_bad_spec_names_the_option_and_what_was_expected(spec, says):
    with pytest.raises(CommandError, match="--catalogs") as error:
        parse_catalogs(spec)
    assert says in str(error.value)


@pytest.mark.parametrize("trainer", [main, embedder.main], ids=["reranker", "embedder"])
def test_cli_refuses_a_foreign_catalog_before_reading_any(trainer, tmp_path, monkeypatch):
    def no_rows(*args, **kwargs):
        raise AssertionError("read a catalog before checking them all")

    monkeypatch.setattr(embedder, "triples", no_rows)
    result = CliRunner().invoke(trainer, ["--out", str(tmp_path / "r"), "--catalogs", "metatool:train,toolalpaca:all"])
    assert result.exit_code == 2, result.output
    assert "'toolalpaca' is not a training catalog" in result.output
    assert not (tmp_path / "r").exists()


def test_fit_hits_reorder_by_the_weight():
    from training.fit_rerank import hits

    # the selector prefers a (wrong) over b (gold) by log 2; the reranker prefers b by 1 point of score
    rows = [{"id": "q", "gold": ["b"], "candidates": ["a", "b"], "p": [0.6, 0.3], "score": [0.0, 1.0]}]
    assert hits(rows, 0.0) == [0.0]  # c = 0: no reranking
    assert hits(rows, 0.5) == [0.0]  # 0.5 < log 2: still a
    assert hits(rows, 1.0) == [1.0]  # 1 > log 2: b


@pytest.fixture
def policy_folder(tmp_path):
    folder = tmp_path / "policy"
    folder.mkdir()
    (folder / "manifest.json").write_text('{"name": "p"}\n')
    return folder


def test_fit_writes_the_weight_and_the_embedder_it_was_fitted_on(policy_folder, monkeypatch):
    import json

    import training.fit_rerank as fit

    asked = []

    def scored(policy_path, bench, queries, reranker, top, embedder, mode):
        asked.append((bench.name, embedder, mode))
        return [{"id": "q", "gold": ["b"], "candidates": ["a", "b"], "p": [0.6, 0.3], "score": [0.0, 1.0]}]

    monkeypatch.setattr(fit, "scored", scored)
    monkeypatch.setattr(fit, "load_reranker", lambda spec: None)
    args = [str(policy_folder), "--bench", "apibank", "--embedder", "hash:8", "--write"]
    result = CliRunner().invoke(fit.main, args)
    assert result.exit_code == 0, result.output
    assert asked == [("apibank", "hash:8", "fast")]
    rerank = json.loads((policy_folder / "manifest.json").read_text())["rerank"]
    assert rerank["weight"] == 1.0  # the smallest c of the grid above log 2
    assert rerank["fitted"]["embedder"] == "hash:8" and rerank["fitted"]["on"] == ["apibank"]
    assert rerank["fitted"]["hit@1"] == {"apibank": 1.0} and rerank["fitted"]["hit@1_without"] == {"apibank": 0.0}


def test_fit_refuses_an_unknown_embedder_and_leaves_the_manifest(policy_folder):
    from training.fit_rerank import main

    result = CliRunner().invoke(main, [str(policy_folder), "--embedder", "nope", "--write"])
    assert result.exit_code != 0
    assert "--embedder: unknown embedder 'nope'" in result.output
    assert (policy_folder / "manifest.json").read_text() == '{"name": "p"}\n'


def test_fit_refuses_a_bench_that_names_no_catalog_and_leaves_the_manifest(policy_folder):
    from training.fit_rerank import main

    result = CliRunner().invoke(main, [str(policy_folder), "--bench", ",", "--embedder", "hash:8", "--write"])
    assert result.exit_code != 0 and "--bench names no catalog" in result.output, result.output
    assert (policy_folder / "manifest.json").read_text() == '{"name": "p"}\n'


def test_fit_refuses_a_catalog_the_embedder_trained_on(policy_folder):
    from training.fits import catalog

    # the shipped `tools` adapter read every MetaTool request: none of its splits is held out from it
    with pytest.raises(CommandError, match="--bench metatool:val: embedder 'tools' was fine-tuned on metatool"):
        catalog(policy_folder, "metatool:val", "tools")


@pytest.mark.parametrize(
    "spec, says",
    [("nope", "--bench nope: no benchmark 'nope'"), ("apibank:bogus", "--bench apibank:bogus: unknown split")],
)
def test_fit_refuses_a_bad_catalog_before_any_work_and_leaves_the_manifest(policy_folder, spec, says, monkeypatch):
    import training.fit_rerank as fit

    def scored(*args, **kwargs):
        raise AssertionError("scored before every catalog was checked")

    monkeypatch.setattr(fit, "scored", scored)
    result = CliRunner().invoke(
        fit.main, [str(policy_folder), "--bench", f"apibank,{spec}", "--embedder", "hash:8", "--write"]
    )
    assert result.exit_code != 0 and says in result.output, result.output
    assert (policy_folder / "manifest.json").read_text() == '{"name": "p"}\n'


def test_lexical_negatives_replace_the_last_dense_ones_with_bm25s(monkeypatch):
    import toolbank
    from autotool.benchmarks import load_benchmark, load_split
    from toolbank import HashEmbedder
    from toolbank.search import BM25Index
    from training.embedder import triples

    monkeypatch.setattr(toolbank, "load_embedder", lambda spec: HashEmbedder(64))  # no model: a fixed embedding
    dense, _ = triples("metatool", limit=20, negatives=3)
    mixed, _ = triples("metatool", limit=20, negatives=3, lexical=1)
    assert len(dense) == len(mixed) > 0
    for d, m in zip(dense, mixed):
        assert d[:4] == m[:4]  # request, gold, the first two dense negatives
        assert m[4] not in m[1:4]  # a new tool, not the gold one nor a dense negative
    lexical = [m for d, m in zip(dense, mixed) if d[4] != m[4]]
    assert lexical  # most requests share a word with some tool
    bench = load_benchmark("metatool")
    train = set(load_split(bench).tools["train"])  # the negatives come from the train tools
    texts = [t.text for t in bench.tools if t.name in train]
    bm25 = BM25Index(range(len(texts)), texts)
    for m in lexical:  # BM25's best tool that is neither the gold one nor a dense negative
        assert m[4] == next(texts[i] for i in bm25.search(m[0], 16)[1] if texts[i] not in m[1:4])


def test_more_lexical_negatives_than_negatives_is_refused(tmp_path):
    result = CliRunner().invoke(main, ["--out", str(tmp_path / "r"), "--negatives", "2", "--lexical-negatives", "3"])
    assert result.exit_code != 0 and "--lexical-negatives: expected at most --negatives (2), got 3" in result.output


@pytest.mark.slow
def test_the_same_seed_trains_the_same_reranker(tmp_path, monkeypatch):
    """`make train-reranker` must reproduce the shipped reranker: the new scoring layer's and the adapter's
    random start are seeded too, not only the trainer's run. A different seed gives a different reranker."""
    import numpy as np
    from safetensors.numpy import load_file

    monkeypatch.setenv("AUTOTOOL_HOME", str(tmp_path / "home"))
    weights = []
    for i, seed in enumerate((0, 0, 1)):
        out = tmp_path / f"run{i}"
        argv = ["--out", str(out), "--catalogs", "metatool:train", "--per-catalog", "8", "--negatives", "1"]
        argv += ["--batch-size", "4", "--epochs", "1", "--seed", str(seed)]
        result = CliRunner().invoke(main, argv)
        assert result.exit_code == 0, result.output
        weights.append(load_file(out / "reranker" / "adapter_model.safetensors"))
    first, second, other = weights
    assert first.keys() == second.keys() and any("classifier" in k for k in first)
    assert all(np.array_equal(first[k], second[k]) for k in first)
    assert not all(np.array_equal(first[k], other[k]) for k in first)
