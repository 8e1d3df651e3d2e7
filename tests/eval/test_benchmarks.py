import json

import pytest
from click.testing import CliRunner
from helpers import ASSETS, write_bench

from autotool import Policy
from autotool.benchmarks import (
    BenchmarkError,
    benchmark_bank,
    catalog_queries,
    load_benchmark,
    load_split,
    make_split,
    save_split,
    select_queries,
    steps_of,
)
from eval.__main__ import main
from eval.methods import METHODS, EvalContext


@pytest.fixture
def bench_dir(tmp_path):
    return write_bench(tmp_path / "tiny")


def test_split_is_deterministic_disjoint_and_complete(bench_dir):
    bench = load_benchmark(bench_dir)
    a, b = make_split(bench, seed=0), make_split(bench, seed=0)
    assert a.tools == b.tools and a.queries == b.queries
    assert make_split(bench, seed=1).tools != a.tools
    tools = a.tools
    assert len(tools["train"]) + len(tools["val"]) == round(0.34 * 10) and len(tools["unseen"]) == 10 - 3
    assert not (set(tools["train"]) & set(tools["val"])) and not (a.seen_tools & a.unseen_tools)
    ids = [i for v in a.queries.values() for i in v]
    assert sorted(ids) == sorted(q.id for q in bench.queries)  # every query in exactly one split
    by_id = {q.id: q for q in bench.queries}
    for qid in a.queries["train"] + a.queries["seen-test"]:
        assert set(by_id[qid].gold_tools) <= set(tools["train"])  # no val or unseen tool reaches training
    for qid in a.queries["unseen-test"]:
        assert set(by_id[qid].gold_tools) & a.unseen_tools
    for qid in a.queries["val"]:
        assert set(by_id[qid].gold_tools) & set(tools["val"]) and not set(by_id[qid].gold_tools) & a.unseen_tools


def test_a_split_is_made_without_writing_and_a_saved_one_is_reused(bench_dir):
    bench = load_benchmark(bench_dir)
    split = load_split(bench, seed=0)
    assert not (bench_dir / "splits").exists()  # the benchmark folder is the user's: nothing written
    assert load_split(bench, seed=0) == split == make_split(bench, seed=0)
    path = save_split(bench, split)
    assert path == bench_dir / "splits" / "seed0.json"
    saved = json.loads(path.read_text())
    saved["tools"]["unseen"] = saved["tools"]["unseen"][:1]  # a hand edit is what later runs get
    path.write_text(json.dumps(saved))
    assert load_split(bench, seed=0).tools["unseen"] == split.tools["unseen"][:1]
    with open(bench_dir / "tools.jsonl", "a") as f:
        f.write(json.dumps({"name": "new_tool", "description": "d", "parameters": {}}) + "\n")
    with pytest.raises(BenchmarkError, match="another tool list"):
        load_split(load_benchmark(bench_dir), seed=0)


def test_steps_of_multi_tool_query(bench_dir):
    query = next(q for q in load_benchmark(bench_dir).queries if q.id == "multi")
    steps = steps_of(query)
    assert [(s.gold, s.context, s.gold_args) for s in steps] == [
        ("get_weather", (), {"x": "Oslo"}),
        ("send_email", ("get_weather",), {"x": "me"}),
    ]


def test_catalog_queries_reads_name_split_and_limit():
    bench, every = catalog_queries("apibank")
    assert bench.name == "apibank" and len(every) == len(bench.queries)  # split `all`, no limit
    _, sample = catalog_queries("apibank:all:10")
    assert sample == select_queries(bench, load_split(bench), "all", 10)
    _, val = catalog_queries("apibank:val")
    assert val == select_queries(bench, load_split(bench), "val")


def test_select_queries(bench_dir):
    bench = load_benchmark(bench_dir)
    split = make_split(bench)
    assert len(select_queries(bench, split, "all")) == 61
    assert len(select_queries(bench, split, "all", single_tool=True)) == 60
    sample = select_queries(bench, split, "all", limit=10, seed=4)
    assert len(sample) == 10 and sample == select_queries(bench, split, "all", limit=10, seed=4)
    rest = select_queries(bench, split, "all", limit=100, seed=4, exclude={q.id for q in sample})
    assert len(rest) == 51 and not {q.id for q in rest} & {q.id for q in sample}
    with pytest.raises(BenchmarkError, match="unknown split 'test'"):
        select_queries(bench, split, "test")


def test_bad_benchmarks(tmp_path, bench_dir):
    with pytest.raises(BenchmarkError, match="no benchmark '.*nowhere': expected one of metatool"):
        load_benchmark(tmp_path / "nowhere")
    (bench_dir / "queries.jsonl").write_text('{"id": "x", "query": "q", "gold_tools": ["ghost"]}\n')
    with pytest.raises(BenchmarkError, match=r"queries.jsonl line 1: gold tool 'ghost' is not in"):
        load_benchmark(bench_dir)
    (bench_dir / "queries.jsonl").write_text('{"id": "x"}\n')
    with pytest.raises(BenchmarkError, match="line 1: expected JSON with id, query and gold_tools"):
        load_benchmark(bench_dir)
    (bench_dir / "queries.jsonl").unlink()
    with pytest.raises(BenchmarkError, match="queries.jsonl is missing"):
        load_benchmark(bench_dir)


def test_vendored_benchmarks_load():
    for name, n_tools, n_queries in [
        ("metatool", 199, 21029),
        ("seal_tools", 4076, 2054),
        ("bfcl", 1287, 2351),
        ("complexfuncbench", 40, 1000),
    ]:
        bench = load_benchmark(name)
        assert (len(bench.tools), len(bench.queries)) == (n_tools, n_queries)


@pytest.fixture
def run_eval(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTOOL_HOME", str(tmp_path / "home"))

    def run(*args):
        return CliRunner().invoke(main, [str(a) for a in args] + ["--embedder", "hash:64"])

    return run


def test_cli_writes_results(run_eval, bench_dir, tmp_path):
    out = tmp_path / "out"
    result = run_eval(
        "--bench", bench_dir, "--methods", "bm25,dense,hybrid", "--split", "all,unseen-test", "--out", out
    )
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert [s["split"] for s in results["splits"]] == ["all", "unseen-test"]
    everything = results["splits"][0]
    assert everything["n_queries"] == 61 and everything["n"] == 62
    for name in ("bm25", "dense", "hybrid"):
        m = everything["methods"][name]
        assert 0 <= m["hit@1"] <= m["hit@5"] <= 1 and m["p50_ms"] <= m["p95_ms"]
    assert everything["methods"]["bm25"]["hit@1"] > 0.5  # the queries repeat their tool's description
    assert {(p["a"], p["b"]) for p in everything["paired"]} == {
        ("bm25", "dense"),
        ("bm25", "hybrid"),
        ("dense", "hybrid"),
    }
    assert (out / "results.png").stat().st_size > 5000
    assert "| bm25 |" in (out / "results.md").read_text()
    assert len((out / "steps.csv").read_text().splitlines()) > 62 * 3


def test_cli_errors(run_eval, bench_dir, tmp_path):
    result = run_eval("--bench", bench_dir, "--methods", "bm25,oracle")
    assert result.exit_code == 1 and "unknown method 'oracle'" in result.output
    result = run_eval("--bench", tmp_path / "missing")
    assert result.exit_code == 1 and "no benchmark" in result.output
    result = run_eval("--bench", bench_dir, "--split", "seen")
    assert result.exit_code == 1 and "unknown split 'seen'" in result.output


def test_cli_samples_disjoint_from_earlier_runs(run_eval, bench_dir, tmp_path):
    first, second, third = tmp_path / "first", tmp_path / "second", tmp_path / "third"
    result = run_eval("--bench", bench_dir, "--methods", "bm25", "--split", "all", "--limit", 20, "--out", first)
    assert result.exit_code == 0, result.output
    result = run_eval(
        "--bench",
        bench_dir,
        "--methods",
        "bm25",
        "--split",
        "all",
        "--limit",
        20,
        "--exclude-run",
        first,
        "--out",
        second,
    )
    assert result.exit_code == 0, result.output

    def queries(out):
        return {line.split(",")[2].rpartition("#")[0] for line in (out / "steps.csv").read_text().splitlines()[1:]}

    a, b = queries(first), queries(second)
    for out in (first, second):  # as in a fresh clone: steps.csv is not committed, results.json lists the queries
        (out / "steps.csv").unlink()
    result = run_eval(
        "--bench",
        bench_dir,
        "--methods",
        "bm25",
        "--split",
        "all",
        "--limit",
        30,
        "--exclude-run",
        first,
        "--exclude-run",
        second,
        "--out",
        third,
    )
    assert result.exit_code == 0, result.output
    c = queries(third)
    assert len(a) == len(b) == 20 and len(c) == 61 - 40  # fewer left than the limit: all the rest
    assert not a & b and not c & (a | b)
    assert json.loads((third / "results.json").read_text())["excluded_queries"] == {"all": 40}
    assert "(40 on all): a disjoint sample" in (third / "results.md").read_text()

    result = run_eval("--bench", bench_dir, "--methods", "bm25", "--exclude-run", tmp_path / "nothing")
    assert result.exit_code == 1 and "--exclude-run" in result.output and "not an evaluation output" in result.output
    assert sorted(json.loads((third / "results.json").read_text())["splits"][0]["queries"]) == sorted(c)
    meta = json.loads((first / "results.json").read_text())
    (first / "results.json").write_text(json.dumps({**meta, "bench": "metatool"}))
    result = run_eval("--bench", bench_dir, "--methods", "bm25", "--exclude-run", first)
    assert result.exit_code == 1 and "field 'bench' is 'metatool', expected 'tiny'" in result.output
    # An output from before results.json listed its queries, without its steps.csv: nothing to read them from.
    old = {**meta, "splits": [{k: v for k, v in s.items() if k != "queries"} for s in meta["splits"]]}
    (first / "results.json").write_text(json.dumps(old))
    result = run_eval("--bench", bench_dir, "--methods", "bm25", "--split", "all", "--exclude-run", first)
    assert result.exit_code == 1 and "split 'all' has no field 'queries'" in result.output
    (first / "results.json").write_text("{")
    result = run_eval("--bench", bench_dir, "--methods", "bm25", "--exclude-run", first)
    assert result.exit_code == 1 and f"{first / 'results.json'}: not valid JSON" in result.output


def test_cli_compares_policies_and_modes(run_eval, bench_dir, tmp_path):
    bank = benchmark_bank(load_benchmark(bench_dir), "hash:64")  # the bank the CLI evaluates on (cached)
    folder, out = tmp_path / "tiny-policy", tmp_path / "out"
    Policy.create(bank, backbone=ASSETS / "tiny-llama").save(folder)
    result = run_eval(
        "--bench",
        bench_dir,
        "--methods",
        "dense",
        "--split",
        "unseen-test",
        "--limit",
        "3",
        "--policy",
        f"tiny={folder}",
        "--policy",
        f"tiny-fast={folder}:fast",
        "--device",
        "cpu",
        "--batch-size",
        "2",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    methods = json.loads((out / "results.json").read_text())["splits"][0]["methods"]
    assert set(methods) == {"dense", "tiny", "tiny-fast"}
    # The CLI registered `tiny-fast` in fast mode (no rationale) and `tiny` in the default reason mode.
    step = steps_of(load_benchmark(bench_dir).queries[0])[0]
    ctx = EvalContext(load_benchmark(bench_dir), bank, {"device": "cpu", "rationale_tokens": 8, "call_tokens": 8})
    assert METHODS["tiny-fast"](ctx)(step).extra["rationale"] == ""
    assert METHODS["tiny"](ctx)(step).extra["rationale"] != ""  # the random backbone writes something
    result = run_eval("--bench", bench_dir, "--policy", f"x={tmp_path / 'missing'}:fast")
    assert result.exit_code == 1 and "missing is not a policy folder" in result.output


def test_per_request_scores_one_call_a_request_and_any_gold_tool_is_a_hit(run_eval, bench_dir, tmp_path):
    out = tmp_path / "out"
    result = run_eval(
        "--bench", bench_dir, "--methods", "bm25", "--split", "all", "--measure", "per-request", "--out", out
    )
    assert result.exit_code == 0, result.output
    split = json.loads((out / "results.json").read_text())["splits"][0]
    assert split["measure"] == "per-request" and split["n"] == split["n_queries"] == 61  # per step: 62
    bench = load_benchmark(bench_dir)
    bank = benchmark_bank(bench, "hash:64")
    expected = []
    for query in bench.queries:  # the request alone, no context; a hit when BM25's first tool is any gold tool
        first = bank.search(query.text, k=10, mode="bm25")
        expected.append(float(bool(first) and first[0].name in query.gold_tools))
    rows = [line.split(",") for line in (out / "steps.csv").read_text().splitlines()[1:]]
    hits = {step: float(value) for _, method, step, metric, value in rows if metric == "hit@1"}
    assert [hits[f"{q.id}#0"] for q in bench.queries] == expected  # ties: BM25's scores here are distinct
    assert "any of its gold tools" in (out / "results.md").read_text()
    result = run_eval("--bench", bench_dir, "--measure", "per-call")
    assert result.exit_code == 2 and "per-call" in result.output


def test_the_stock_baselines_run_beside_another_embedder_and_each_method_is_set_against_the_best(
    run_eval, bench_dir, tmp_path, monkeypatch
):
    import eval.methods

    monkeypatch.setattr(eval.methods, "BASELINE_EMBEDDER", "hash:32")  # stands for stock all-MiniLM-L6-v2 here
    out, stock = tmp_path / "out", tmp_path / "stock"
    result = run_eval("--bench", bench_dir, "--split", "all", "--out", out)  # on hash:64, no --methods
    assert result.exit_code == 0, result.output
    split = json.loads((out / "results.json").read_text())["splits"][0]
    assert list(split["methods"]) == ["bm25", "dense-stock", "hybrid-stock", "dense"]
    result = CliRunner().invoke(
        main, ["--bench", str(bench_dir), "--split", "all", "--embedder", "hash:32", "--out", str(stock)]
    )
    assert result.exit_code == 0, result.output
    on_stock = json.loads((stock / "results.json").read_text())["splits"][0]
    assert list(on_stock["methods"]) == ["bm25", "dense", "hybrid"]  # the bank is the baselines' own
    for method in ("dense", "hybrid"):  # the same scores as on a bank of the baseline embedder
        assert split["methods"][f"{method}-stock"]["hit@1"] == on_stock["methods"][method]["hit@1"]
    assert split["methods"]["dense"]["hit@1"] != on_stock["methods"]["dense"]["hit@1"]  # hash:64 is another space
    best = max(("bm25", "dense-stock", "hybrid-stock"), key=lambda m: split["methods"][m]["hit@1"])
    assert split["best_baseline"] == best and list(split["versus_best"]) == ["dense"]
    gap = split["versus_best"]["dense"]
    assert gap["mean"] == pytest.approx(split["methods"]["dense"]["hit@1"] - split["methods"][best]["hit@1"])
    assert gap["ci_low"] <= gap["mean"] <= gap["ci_high"]
    assert f"minus the best of the baselines that ran, {best}" in (out / "results.md").read_text()
    stock_best = max(("bm25", "dense", "hybrid"), key=lambda m: on_stock["methods"][m]["hit@1"])
    assert on_stock["best_baseline"] == stock_best and on_stock["versus_best"] == {}  # every method is a baseline


def test_per_request_policy_methods_choose_without_arguments(run_eval, bench_dir, tmp_path):
    bank = benchmark_bank(load_benchmark(bench_dir), "hash:64")
    folder, out = tmp_path / "tiny-policy", tmp_path / "out"
    Policy.create(bank, backbone=ASSETS / "tiny-llama").save(folder)
    result = run_eval(
        "--bench", bench_dir, "--methods", "bm25", "--split", "all", "--limit", "4", "--measure", "per-request",
        "--policy", f"tiny={folder}:fast", "--device", "cpu", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    split = json.loads((out / "results.json").read_text())["splits"][0]
    assert "format_error" not in split["methods"]["tiny"] and "schema_valid" not in split["methods"]["tiny"]
    assert "schema_valid" not in (out / "results.md").read_text()  # no arguments were asked for
    assert list(split["versus_best"]) == ["tiny"]


def test_the_best_baseline_is_the_first_listed_of_those_tied_and_the_rest_are_set_against_it(bench_dir, monkeypatch):
    from eval.harness import evaluate
    from eval.methods import Prediction

    bench = load_benchmark(bench_dir)
    bank = benchmark_bank(bench, "hash:64")

    def always(tool):  # ranks `tool` first for every step
        return lambda ctx: lambda step: Prediction([tool])

    monkeypatch.setitem(METHODS, "weather", always("get_weather"))
    monkeypatch.setitem(METHODS, "weather-too", always("get_weather"))
    monkeypatch.setitem(METHODS, "email", always("send_email"))
    split = load_split(bench, 0)
    for order in (["weather", "weather-too", "email"], ["weather-too", "weather", "email"]):
        result = evaluate(bench, split, "all", order, bank, progress=False, baselines=("weather", "weather-too"))
        assert result["best_baseline"] == order[0]  # tied on hit@1: the first listed
        assert list(result["versus_best"]) == ["email"]
        hits = result["methods"]
        assert result["versus_best"]["email"]["mean"] == pytest.approx(
            hits["email"]["hit@1"] - hits["weather"]["hit@1"]
        )
    result = evaluate(bench, split, "all", ["weather", "email"], bank, progress=False, baselines=("email",))
    assert result["best_baseline"] == "email" and list(result["versus_best"]) == ["weather"]
    assert "best_baseline" not in evaluate(bench, split, "all", ["weather"], bank, progress=False)


def test_a_catalogs_bank_keeps_its_namespaced_tools_and_drops_the_ones_it_lost(tmp_path):
    folder = write_bench(tmp_path / "namespaced")
    lines = (folder / "tools.jsonl").read_text().splitlines()
    (folder / "tools.jsonl").write_text("".join(json.dumps({**json.loads(x), "namespace": "ns"}) + "\n" for x in lines))
    bench = load_benchmark(folder)
    bank = benchmark_bank(bench, "hash:64", root=tmp_path / "banks")
    assert sorted(t.qualified_name for t in bank) == sorted(f"ns/{n}" for n in bench.tool_names)  # none removed
    gone = json.loads(lines[0])["name"]  # the catalog drops a tool, and the requests for it
    (folder / "tools.jsonl").write_text(
        "".join(json.dumps({**json.loads(x), "namespace": "ns"}) + "\n" for x in lines[1:])
    )
    queries = (folder / "queries.jsonl").read_text().splitlines()
    (folder / "queries.jsonl").write_text("".join(q + "\n" for q in queries if gone not in json.loads(q)["gold_tools"]))
    bank = benchmark_bank(load_benchmark(folder), "hash:64", root=tmp_path / "banks")
    assert len(bank) == len(lines) - 1 and f"ns/{gone}" not in {t.qualified_name for t in bank}


def test_a_later_steps_called_tools_are_named_as_the_bank_names_them(tmp_path):
    from autotool.benchmarks import Query, step_input, steps_of

    folder = write_bench(tmp_path / "namespaced")
    lines = (folder / "tools.jsonl").read_text().splitlines()
    (folder / "tools.jsonl").write_text("".join(json.dumps({**json.loads(x), "namespace": "ns"}) + "\n" for x in lines))
    bank = benchmark_bank(load_benchmark(folder), "hash:64", root=tmp_path / "banks")
    later = steps_of(Query("q", "weather, then a forecast", ("get_weather", "get_forecast"), None))[1]
    assert step_input(bank, later).exclude == ("ns/get_weather",)  # the served path excludes by qualified name


def test_steps_that_call_a_tool_again_are_counted_and_are_misses_for_the_baselines(bench_dir, tmp_path):
    from eval.harness import evaluate
    from eval.report import markdown

    calls = [{"tool": "get_weather", "args": {"x": "Oslo"}}, {"tool": "get_weather", "args": {"x": "Lyon"}}]
    with open(bench_dir / "queries.jsonl", "a") as f:
        f.write(
            json.dumps(
                {
                    "id": "twice",
                    "query": "weather in Oslo and in Lyon",
                    "gold_tools": ["get_weather"],
                    "gold_args": {"calls": calls},
                }
            )
            + "\n"
        )
    bench = load_benchmark(bench_dir)
    twice = steps_of(next(q for q in bench.queries if q.id == "twice"))
    assert [s.repeats_a_call for s in twice] == [False, True]
    assert not any(s.repeats_a_call for s in steps_of(next(q for q in bench.queries if q.id == "multi")))
    result = evaluate(bench, load_split(bench, 0), "all", ["bm25"], benchmark_bank(bench, "hash:64"), progress=False)
    assert result["repeating"] == 1
    second = result["step_ids"].index("twice#1")
    assert result["per_step"]["bm25"]["hit@1"][second] == 0.0  # the baseline drops the called tool
    text = markdown({"splits": [result], "command": "python -m eval", "bench": "tiny", "seed": 0, "n_tools": 10})
    assert f"1 of the {result['n']} steps call a tool an earlier step of their request called" in text
    assert f"at most {(result['n'] - 1) / result['n']:.3f}" in text
