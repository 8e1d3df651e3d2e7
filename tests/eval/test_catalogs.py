"""Issue #23's protocol: catalog roles, the vendored foreign validation catalogs, what a policy trained on, and
the evaluation's refusal to call a catalog foreign for a policy that trained on it."""

import json
import shutil

import pytest
from click.testing import CliRunner
from helpers import ASSETS, write_bench

from autotool import Policy
from autotool.benchmarks import (
    ABSTENTION,
    DATA,
    FOREIGN_VALIDATION,
    TRAINING_CATALOGS,
    VENDORED,
    BenchmarkError,
    benchmark_bank,
    catalog_role,
    load_benchmark,
    load_no_tool,
    manifest_trained_on,
    policy_trained_on,
    steps_of,
    trained_catalogs,
    trained_on_bench,
    training_record,
)
from eval.__main__ import main
from toolbank.tool import NAME_PATTERN

SHIPPED = DATA.parent / "default_policy"


def test_catalog_roles_are_disjoint_and_every_vendored_catalog_has_one():
    roles = [TRAINING_CATALOGS, FOREIGN_VALIDATION, ABSTENTION]
    assert sum(map(len, roles)) == len(set().union(*roles)) == 7
    assert set(VENDORED) == set(TRAINING_CATALOGS) | set(FOREIGN_VALIDATION)
    assert {p.name for p in DATA.iterdir() if p.is_dir() and not p.name.startswith("_")} == set().union(*roles)


@pytest.mark.parametrize("name, n_tools, n_queries, n_steps", [("apibank", 52, 354, 460), ("toolalpaca", 94, 208, 282)])
def test_foreign_validation_catalogs_load_by_name_with_their_licence(name, n_tools, n_queries, n_steps):
    bench = load_benchmark(name)
    assert (bench.name, len(bench.tools), len(bench.queries)) == (name, n_tools, n_queries)
    assert sum(len(steps_of(q)) for q in bench.queries) == n_steps
    assert all(NAME_PATTERN.fullmatch(t.name) for t in bench.tools)
    for file in ("README.md", "LICENSE", "meta.json"):
        assert (DATA / name / file).is_file(), file
    assert "Apache" in (DATA / name / "LICENSE").read_text()
    assert json.loads((DATA / name / "meta.json").read_text())["commit"]
    assert catalog_role(bench) == "foreign-validation"
    assert catalog_role(load_benchmark("metatool")) == "training"


def test_no_tool_queries_are_refused_by_load_benchmark_and_read_by_load_no_tool(tmp_path):
    with pytest.raises(BenchmarkError, match="load_no_tool"):
        load_benchmark("metatool_no_tool")
    with pytest.raises(BenchmarkError, match="no gold tool"):
        load_benchmark(DATA / "metatool_no_tool")
    bench = load_no_tool()
    assert (len(bench.tools), len(bench.queries)) == (199, 520)
    assert all(q.gold_tools == () and steps_of(q) == [] for q in bench.queries)
    assert (DATA / "metatool_no_tool" / "LICENSE").is_file()
    with pytest.raises(BenchmarkError, match="a no-tool query has gold_tools"):
        load_no_tool(write_bench(tmp_path / "tiny"))


def test_the_shipped_policy_and_its_reranker_trained_on_the_training_catalogs_only():
    # the policy: MetaTool's and Seal-Tools' train splits; its reranker: every MetaTool and BFCL request
    # it read, and Seal-Tools' train split (autotool/rerankers/all-MiniLM-L6-v2-rerank/manifest.json)
    assert trained_catalogs(SHIPPED) == {"metatool", "seal_tools", "bfcl"}
    assert [(e["catalog"], e["split"], e["seed"]) for e in policy_trained_on(SHIPPED)] == [
        ("metatool", "train", 0),
        ("seal_tools", "train", 0),
        ("metatool", "all", 0),
        ("bfcl", "all", 0),
    ]
    assert trained_on_bench(SHIPPED, load_benchmark("apibank")) == []
    assert trained_on_bench(SHIPPED, load_benchmark("toolalpaca")) == []


def test_trained_on_reads_the_field_and_older_manifests(tmp_path):
    assert manifest_trained_on({}) == []  # a fresh policy
    explicit = {"trained_on": [{"catalog": "a", "split": "train", "seed": 1}], "benchmark": "a", "split_seed": 1}
    assert manifest_trained_on(explicit) == [{"catalog": "a", "split": "train", "seed": 1}]
    # An older policy: its own run, and the one its config.init started from while that folder exists.
    (tmp_path / "first").mkdir()
    (tmp_path / "first" / "manifest.json").write_text(json.dumps({"benchmark": "a", "split_seed": 0}))
    later = {"benchmark": "b", "split_seed": 2, "config": {"init": str(tmp_path / "first")}}
    assert [(e["catalog"], e["seed"]) for e in manifest_trained_on(later)] == [("a", 0), ("b", 2)]
    later["config"]["init"] = str(tmp_path / "gone")
    assert [e["catalog"] for e in manifest_trained_on(later)] == ["b"]
    with pytest.raises(BenchmarkError, match="not a readable policy manifest"):
        policy_trained_on(tmp_path / "gone")


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A tiny catalog, and a policy folder whose manifest says it trained on that catalog's train split."""
    monkeypatch.setenv("AUTOTOOL_HOME", str(tmp_path / "home"))
    folder = write_bench(tmp_path / "tiny")
    bench = load_benchmark(folder)
    policy = Policy.create(benchmark_bank(bench, "hash:64"), backbone=ASSETS / "tiny-llama")
    policy.info["trained_on"] = [training_record(bench, 0)]
    policy.save(tmp_path / "trained")
    return folder, tmp_path / "trained"


def run_eval(*args):
    return CliRunner().invoke(main, [str(a) for a in args] + ["--embedder", "hash:64", "--device", "cpu"])


def test_split_all_is_refused_for_a_policy_that_trained_on_the_catalog(tiny, tmp_path):
    folder, trained = tiny
    result = run_eval(
        "--bench",
        folder,
        "--methods",
        "bm25",
        "--policy",
        f"mine={trained}:fast",
        "--split",
        "all",
        "--out",
        tmp_path / "out",
    )
    assert result.exit_code == 2, result.output
    assert "'mine' trained on it" in result.output and "tiny" in result.output
    assert str(trained / "manifest.json") in result.output and not (tmp_path / "out").exists()
    # The same catalog under another name is still the catalog it trained on (same tool names).
    shutil.copytree(folder, tmp_path / "renamed")
    result = run_eval("--bench", tmp_path / "renamed", "--policy", f"mine={trained}", "--split", "seen-test,all")
    assert result.exit_code == 2 and "'mine' trained on it" in result.output
    # The default policy methods read $AUTOTOOL_HOME/policy when there is one.
    shutil.copytree(trained, tmp_path / "home" / "policy")
    result = run_eval("--bench", folder, "--methods", "policy-fast", "--split", "all")
    assert result.exit_code == 2 and "'policy-fast' trained on it" in result.output
    assert str(tmp_path / "home" / "policy" / "manifest.json") in result.output


def test_every_split_is_refused_for_a_policy_trained_on_every_tool_of_the_catalog(tiny, tmp_path):
    folder, trained = tiny
    manifest = json.loads((trained / "manifest.json").read_text())
    manifest["trained_on"] = [training_record(load_benchmark(folder), 0, "all-tools")]
    (trained / "manifest.json").write_text(json.dumps(manifest))
    result = run_eval("--bench", folder, "--policy", f"mine={trained}", "--split", "unseen-test")
    assert result.exit_code == 2 and "trained on every tool of tiny" in result.output, result.output
    assert not list(folder.glob("splits"))  # nothing written into the catalog's folder


def test_within_catalog_splits_and_foreign_catalogs_still_run(tiny, tmp_path):
    folder, trained = tiny
    out = tmp_path / "out"
    result = run_eval(
        "--bench",
        folder,
        "--methods",
        "bm25",
        "--policy",
        f"mine={trained}:fast",
        "--split",
        "seen-test,unseen-test",
        "--limit",
        2,
        "--batch-size",
        2,
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    recorded = json.loads((out / "results.json").read_text())["policies"]
    assert recorded["mine"]["trained_on"][0]["catalog"] == "tiny"
    # A catalog it never trained on is foreign: --split all runs.
    other = tmp_path / "other"
    shutil.copytree(folder, other, ignore=shutil.ignore_patterns("splits"))
    with open(other / "tools.jsonl", "a") as f:
        f.write(json.dumps({"name": "extra_tool", "description": "Something else entirely.", "parameters": {}}) + "\n")
    result = run_eval(
        "--bench",
        other,
        "--methods",
        "bm25",
        "--policy",
        f"mine={trained}:fast",
        "--split",
        "all",
        "--limit",
        2,
        "--batch-size",
        2,
        "--out",
        tmp_path / "foreign",
    )
    assert result.exit_code == 0, result.output
    # Baselines alone on --split all are never refused.
    assert run_eval("--bench", folder, "--methods", "bm25", "--split", "all", "--out", tmp_path / "b").exit_code == 0


def test_training_on_a_foreign_validation_catalog_is_refused(tmp_path):
    from training.data import DataError
    from training.trainer import RunConfig, Trainer

    with pytest.raises(DataError, match="foreign validation catalog"):
        Trainer(RunConfig(benchmark="toolalpaca", out=str(tmp_path / "run"), embedder="hash:64"), ["sft"], "phase 1")
    assert not (tmp_path / "run").exists()


def test_an_embedder_fine_tuned_on_the_catalog_is_refused_where_its_splits_are_not_held_out(tiny, tmp_path):
    from toolbank.embed import embedder_trained_on

    shipped = embedder_trained_on("tools")  # the shipped adapter trained on every MetaTool tool
    assert [(e["catalog"], e["split"]) for e in shipped] == [("metatool", "all")]
    assert (
        embedder_trained_on("default") == shipped
        and embedder_trained_on("stock") == embedder_trained_on("hash:8") == []
    )
    result = CliRunner().invoke(
        main, ["--bench", "metatool", "--embedder", "tools", "--split", "unseen-test", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2 and "'tools' was fine-tuned on metatool (all split" in result.output, result.output
    assert "--embedder stock" in result.output and not (tmp_path / "o").exists()
    # An adapter fine-tuned on a catalog's train split: its held-out splits may run, the catalog as foreign not.
    folder, _ = tiny
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    record = training_record(load_benchmark(folder), 0, "train")
    (adapter / "manifest.json").write_text(json.dumps({"trained_on": [{**record, "catalog": "renamed"}]}))
    args = ["--bench", str(folder), "--methods", "bm25", "--embedder", str(adapter)]
    result = CliRunner().invoke(main, args + ["--split", "all"])
    assert result.exit_code == 2 and "fine-tuned on tiny (train split" in result.output, result.output  # by digest
    for split, seed in [("train", 0), ("unseen-test", 1)]:  # its own training text; another seed's held-out part
        result = CliRunner().invoke(main, args + ["--split", split, "--seed", str(seed)])
        assert result.exit_code == 2 and f"--seed {seed}) would score it" in result.output, result.output
    result = CliRunner().invoke(main, args + ["--split", "unseen-test"])
    assert "fine-tuned" not in result.output and "not a sentence-transformers model folder" in result.output
    (adapter / "manifest.json").write_text(json.dumps({"trained_on": {"catalog": "tiny"}}))
    result = CliRunner().invoke(main, args + ["--split", "unseen-test"])
    assert result.exit_code == 1 and "field 'trained_on' must be a list of objects" in result.output


def test_training_with_an_embedder_fine_tuned_on_every_tool_of_the_catalog_is_refused(tmp_path):
    from training.data import DataError
    from training.trainer import RunConfig, Trainer

    with pytest.raises(DataError, match="'tools' was fine-tuned on metatool \\(all split.*use embedder: stock"):
        Trainer(RunConfig(benchmark="metatool", out=str(tmp_path / "run"), embedder="tools"), ["sft"], "phase 1")
    assert not (tmp_path / "run").exists()


def test_bfcl_is_a_training_catalog_with_its_licence_and_every_call_in_the_catalog():
    bench = load_benchmark("bfcl")
    assert catalog_role(bench) == "training"
    assert "Apache" in (DATA / "bfcl" / "LICENSE").read_text()
    meta = json.loads((DATA / "bfcl" / "meta.json").read_text())
    assert meta["counts"]["tools"] == len(bench.tools) and meta["counts"]["queries"] == len(bench.queries)
    assert len(meta["wheel_sha256"]) == 64
    names = {t.name for t in bench.tools}
    assert all(c["tool"] in names for q in bench.queries for c in q.calls)
    assert sum(len(steps_of(q)) for q in bench.queries) == meta["counts"]["calls"] == 2667
    assert all(
        len(set(s.context)) == len(s.context) and s.gold not in s.context for q in bench.queries for s in steps_of(q)
    )


def test_bfcl_types_become_json_schema_and_answers_their_first_acceptable_value():
    from autotool.data.vendor_bfcl import first_value, json_schema

    bfcl = {
        "type": "dict",
        "properties": {
            "rate": {"type": "float"},
            "pair": {"type": "tuple", "items": {"type": "integer"}},
            "anything": {"type": "any", "description": "x"},
            "nested": {"type": "dict", "properties": {"on": {"type": "boolean"}}},
        },
    }
    assert json_schema(bfcl) == {
        "type": "object",
        "properties": {
            "rate": {"type": "number"},
            "pair": {"type": "array", "items": {"type": "integer"}},
            "anything": {"description": "x"},
            "nested": {"type": "object", "properties": {"on": {"type": "boolean"}}},
        },
    }
    assert first_value(["", "celsius"]) == "celsius"  # "" is BFCL's "may be omitted"
    assert first_value([""]) == ""
    assert first_value([{"size": ["large", "L"], "note": [""]}]) == {"size": "large"}
    assert first_value([[1, 2], [2, 1]]) == [1, 2]


def test_complexfuncbench_is_a_training_catalog_with_its_licence_and_every_call_resolved():
    bench = load_benchmark("complexfuncbench")
    assert catalog_role(bench) == "training"
    assert "Apache" in (DATA / "complexfuncbench" / "LICENSE").read_text()
    meta = json.loads((DATA / "complexfuncbench" / "meta.json").read_text())
    assert meta["counts"]["tools"] == len(bench.tools) == 40 and meta["counts"]["queries"] == len(bench.queries)
    names = {t.name for t in bench.tools}
    assert set(meta["log"]["renamed"].values()) <= names
    assert all(c["tool"] in names for q in bench.queries for c in q.calls)
    assert sum(len(steps_of(q)) for q in bench.queries) == meta["counts"]["calls"] == 3720
    # no argument still holds an unresolved reference to an earlier call's output
    assert not any("$var" in json.dumps(c["args"]) for q in bench.queries for c in q.calls)


def test_complexfuncbench_references_resolve_against_the_recorded_response():
    from autotool.data.vendor_complexfuncbench import UNRESOLVED, resolve

    responses = {"var1": [{"coordinates": {"latitude": 32.8}}], "var2": {"data": {"hotels": [{"id": 7}, {"id": 9}]}}}
    assert resolve("$var1.coordinates.latitude$", responses) == 32.8  # a list response: its first element
    assert resolve("$var2.data.hotels.1.id$", responses) == 9  # a numbered step indexes the list
    assert resolve("$var2.data.hotels.id$", responses) == 7
    assert resolve("$var2.data.missing$", responses) is UNRESOLVED
    assert resolve("$var3.x$", responses) is UNRESOLVED
    assert resolve("plain text", responses) == "plain text"
