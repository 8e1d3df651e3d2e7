"""Benchmarks (tools.jsonl + queries.jsonl), their seeded seen/unseen tool splits, and selection steps.

A split is written to `<benchmark folder>/splits/seed<N>.json` the first time it is asked for and read
back afterwards, so training and evaluation can never disagree about which tools are unseen.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from toolbank import Tool, ToolBank, ToolError, atomic_write, autotool_home, load_file

DATA = Path(__file__).parent / "data"

# Catalog roles (issue #23: judge across catalogs). Each vendored catalog has exactly one role:
#  - TRAINING_CATALOGS: the only catalogs a policy trains on (their train split; val for calibration), and the
#    ones whose seen/unseen splits give the within-catalog figures.
#  - FOREIGN_VALIDATION: never trained on. Designs are chosen and weights tuned on them, evaluated whole
#    (`python -m eval --split all`); their figures are validation figures, not a test.
#  - ABSTENTION: queries that need no tool (`gold_tools: []`); `load_benchmark` refuses them, read them
#    with `load_no_tool`.
# A policy's manifest records what it trained on (`trained_on`, see `policy_trained_on`), and the evaluation
# refuses to treat a catalog as foreign for a policy that trained on it.
TRAINING_CATALOGS = ("metatool", "seal_tools", "bfcl", "complexfuncbench")
FOREIGN_VALIDATION = ("apibank", "toolalpaca")
ABSTENTION = ("metatool_no_tool",)
VENDORED = TRAINING_CATALOGS + FOREIGN_VALIDATION  # loadable by name with load_benchmark
QUERY_SPLITS = ("train", "val", "seen-test", "unseen-test", "all")
SPLIT_VERSION = 1


class BenchmarkError(ValueError):
    """A benchmark folder or split file is missing or inconsistent. The message names the file."""


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    gold_tools: tuple[str, ...]
    calls: tuple[dict, ...] | None  # [{"tool": name, "args": {...}}, ...] in order, or None without arguments


@dataclass(frozen=True)
class Step:
    """One selection step: pick `gold` for `query`, after the tools in `context` were already called."""

    query: Query
    index: int
    gold: str
    gold_args: dict | None
    context: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.query.id}#{self.index}"

    @property
    def repeats_a_call(self) -> bool:
        """The gold tool is one an earlier step called, which no step may choose again: a miss for every method."""
        return self.gold in self.context


@dataclass
class Benchmark:
    name: str
    folder: Path
    tools: list[Tool]
    queries: list[Query]

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]


def load_benchmark(name_or_path: str | Path) -> Benchmark:
    """A vendored benchmark by name (`VENDORED`: the training catalogs and the foreign validation catalogs) or
    any folder in the same format. Every query must name at least one gold tool."""
    return _load(name_or_path, VENDORED, no_tool=False)


def load_no_tool(name_or_path: str | Path = "metatool_no_tool") -> Benchmark:
    """A folder of queries that need no tool (`ABSTENTION`, or a folder in the same format): its tools, and
    queries whose `gold_tools` are all empty (a query with a gold tool is an error). Such queries have no
    selection steps (`steps_of` gives none) and no seen/unseen split; they are for judging abstention."""
    return _load(name_or_path, ABSTENTION, no_tool=True)


def _load(name_or_path: str | Path, vendored: tuple[str, ...], no_tool: bool) -> Benchmark:
    folder = DATA / str(name_or_path) if str(name_or_path) in vendored else Path(name_or_path)
    if not folder.is_dir():
        hint = (
            f" ({name_or_path} holds queries that need no tool: read it with load_no_tool)"
            if str(name_or_path) in ABSTENTION
            else ""
        )
        raise BenchmarkError(
            f"no benchmark {str(name_or_path)!r}: expected one of {', '.join(vendored)} or a folder "
            f"holding tools.jsonl and queries.jsonl{hint}"
        )
    for file in ("tools.jsonl", "queries.jsonl"):
        if not (folder / file).is_file():
            raise BenchmarkError(f"{folder / file} is missing; a benchmark folder holds tools.jsonl and queries.jsonl")
    try:
        tools, _ = load_file(folder / "tools.jsonl", "plain")
    except ToolError as e:
        raise BenchmarkError(str(e)) from None
    names = {t.name for t in tools}
    queries = []
    with open(folder / "queries.jsonl", encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{folder / 'queries.jsonl'} line {line_no}"
            try:
                row = json.loads(line)
                gold, text, qid = tuple(row["gold_tools"]), row["query"], str(row["id"])
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise BenchmarkError(f"{where}: expected JSON with id, query and gold_tools ({e})") from None
            missing = [n for n in gold if n not in names]
            if no_tool and gold:
                raise BenchmarkError(f"{where}: gold tools {list(gold)}; a no-tool query has gold_tools []")
            if not gold and not no_tool:
                raise BenchmarkError(
                    f"{where}: no gold tool (a folder of queries that need no tool is read with "
                    "load_no_tool, not load_benchmark)"
                )
            if missing:
                raise BenchmarkError(f"{where}: gold tool {missing[0]!r} is not in {folder / 'tools.jsonl'}")
            calls = (row.get("gold_args") or {}).get("calls")
            queries.append(Query(qid, text, gold, tuple(calls) if calls else None))
    return Benchmark(folder.name, folder, tools, queries)


def steps_of(query: Query) -> list[Step]:
    """Step i's gold is call i's tool, with the earlier calls as context; without calls, gold tools in order."""
    calls = query.calls or tuple({"tool": name, "args": None} for name in query.gold_tools)
    return [
        Step(query, i, call["tool"], call.get("args"), tuple(c["tool"] for c in calls[:i]))
        for i, call in enumerate(calls)
    ]


@dataclass
class Split:
    """Tools: `train` + `val` are seen (val tools never reach training inputs), `unseen` the rest."""

    bench: str
    seed: int
    tools: dict[str, list[str]]  # train, val, unseen
    queries: dict[str, list[str]]  # train, val, seen-test, unseen-test

    @property
    def seen_tools(self) -> set[str]:
        return set(self.tools["train"]) | set(self.tools["val"])

    @property
    def unseen_tools(self) -> set[str]:
        return set(self.tools["unseen"])

    def query_ids(self, split: str) -> list[str] | None:
        """Ids of a query split; None for `all`."""
        if split not in QUERY_SPLITS:
            raise BenchmarkError(f"unknown split {split!r}; expected one of {', '.join(QUERY_SPLITS)}")
        return None if split == "all" else self.queries[split]


def _tools_digest(bench: Benchmark) -> str:
    return hashlib.sha256("\n".join(sorted(bench.tool_names)).encode()).hexdigest()[:16]


def make_split(
    bench: Benchmark,
    seed: int = 0,
    seen_fraction: float = 0.34,
    val_fraction: float = 0.2,
    test_fraction: float = 0.2,
    all_tools: bool = False,
) -> Split:
    """Seeded split. Tools: `seen_fraction` seen, of which `val_fraction` are validation tools.

    Queries: `unseen-test` has at least one unseen gold tool; `val` at least one validation tool and no
    unseen one; the rest (all gold tools in train tools) go `test_fraction` to `seen-test`, others to `train`.

    `all_tools`: every tool is a train tool (training on your own catalog), and the queries are split
    instead: `val_fraction` to `val`, `test_fraction` of the rest to `seen-test`, the others to `train`
    (no tool and no query is unseen).
    """
    rng = random.Random(seed)
    if all_tools:
        ids = sorted(q.id for q in bench.queries)
        rng.shuffle(ids)
        n_val = round(val_fraction * len(ids))
        n_test = round(test_fraction * (len(ids) - n_val))
        queries = {
            "train": sorted(ids[n_val + n_test :]),
            "val": sorted(ids[:n_val]),
            "seen-test": sorted(ids[n_val : n_val + n_test]),
            "unseen-test": [],
        }
        return Split(bench.name, seed, {"train": sorted(bench.tool_names), "val": [], "unseen": []}, queries)
    names = sorted(bench.tool_names)
    rng.shuffle(names)
    n_seen = round(seen_fraction * len(names))
    n_val = round(val_fraction * n_seen)
    tools = {"val": sorted(names[:n_val]), "train": sorted(names[n_val:n_seen]), "unseen": sorted(names[n_seen:])}
    unseen, val = set(tools["unseen"]), set(tools["val"])
    queries: dict[str, list[str]] = {"train": [], "val": [], "seen-test": [], "unseen-test": []}
    in_train_tools = []
    for q in bench.queries:
        if unseen & set(q.gold_tools):
            queries["unseen-test"].append(q.id)
        elif val & set(q.gold_tools):
            queries["val"].append(q.id)
        else:
            in_train_tools.append(q.id)
    rng.shuffle(in_train_tools)
    n_test = round(test_fraction * len(in_train_tools))
    queries["seen-test"], queries["train"] = sorted(in_train_tools[:n_test]), sorted(in_train_tools[n_test:])
    return Split(bench.name, seed, tools, queries)


def load_split(bench: Benchmark, seed: int = 0) -> Split:
    """The split of `bench` for `seed`: read from `<folder>/splits/seed<N>.json` when that file exists (the
    vendored catalogs commit theirs; `save_split` writes one to freeze or hand-edit it), else made in memory
    (`make_split`: the same for the same seed and tools). Nothing is written: the folder is the user's."""
    path = bench.folder / "splits" / f"seed{seed}.json"
    if path.exists():
        try:
            data = json.loads(path.read_text())
            split = Split(data["bench"], data["seed"], data["tools"], data["queries"])
        except (OSError, ValueError, KeyError) as e:
            raise BenchmarkError(f"{path} is not a split file ({e}); delete it to make it again") from None
        if data.get("tools_digest") != _tools_digest(bench):
            raise BenchmarkError(
                f"{path} was made for another tool list than {bench.folder / 'tools.jsonl'}; "
                "delete it to make the split again (and retrain on the new split)"
            )
        return split
    return make_split(bench, seed)


def save_split(bench: Benchmark, split: Split) -> Path:
    """Write `split` to `<folder>/splits/seed<N>.json`, where `load_split` reads it; returns the path."""
    path = bench.folder / "splits" / f"seed{split.seed}.json"
    seed = split.seed
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(
        path,
        json.dumps(
            {
                "version": SPLIT_VERSION,
                "bench": split.bench,
                "seed": seed,
                "tools_digest": _tools_digest(bench),
                "tools": split.tools,
                "queries": split.queries,
            },
            indent=1,
        )
        + "\n",
    )
    return path


def select_queries(
    bench: Benchmark,
    split: Split,
    name: str,
    limit: int | None = None,
    seed: int = 0,
    single_tool: bool = False,
    exclude: Collection[str] = (),
) -> list[Query]:
    """The queries of split `name` (in file order), optionally single-tool only, less the ids in `exclude`,
    sampled down to `limit`."""
    ids = split.query_ids(name)
    wanted = None if ids is None else set(ids)
    excluded = set(exclude)
    queries = [
        q
        for q in bench.queries
        if (wanted is None or q.id in wanted) and q.id not in excluded and (not single_tool or len(q.gold_tools) == 1)
    ]
    if limit is not None and len(queries) > limit:
        keep = set(random.Random(seed).sample(range(len(queries)), limit))
        queries = [q for i, q in enumerate(queries) if i in keep]
    return queries


def catalog_queries(spec: str) -> tuple[Benchmark, list[Query]]:
    """The benchmark and queries a `name[:split[:limit]]` spec names (split `all` by default; a limit samples
    the split's queries with seed 0), as the experiments' scripts take catalogs on their command lines."""
    name, _, rest = spec.partition(":")
    split_name, _, limit = rest.partition(":")
    bench = load_benchmark(name)
    return bench, select_queries(bench, load_split(bench), split_name or "all", int(limit) if limit else None)


def catalog_role(bench: Benchmark) -> str | None:
    """`training` or `foreign-validation` when `bench` is one of those vendored catalogs (by folder, or by the
    same tool names under another folder), else None (a catalog of your own)."""
    digest = _tools_digest(bench)
    for role, names in (("training", TRAINING_CATALOGS), ("foreign-validation", FOREIGN_VALIDATION)):
        for name in names:
            if bench.folder.resolve() == (DATA / name).resolve():
                return role
            with open(DATA / name / "tools.jsonl", encoding="utf-8") as f:
                vendored = sorted(json.loads(line)["name"] for line in f if line.strip())
            if hashlib.sha256("\n".join(vendored).encode()).hexdigest()[:16] == digest:
                return role
    return None


def training_record(bench: Benchmark, seed: int, split: str = "train") -> dict:
    """One entry of a manifest's `trained_on`: the catalog (its name and a digest of its tool names, so a copy
    under another name is still recognised), the query split and the split's seed."""
    return {"catalog": bench.name, "split": split, "seed": seed, "tools_digest": _tools_digest(bench)}


def merge_trained_on(*lists: list[dict]) -> list[dict]:
    """The entries of `lists` in order, one per (catalog, split, seed); a digest recorded anywhere is kept."""
    merged: dict[tuple, dict] = {}
    for entry in (e for entries in lists for e in entries):
        key = (entry["catalog"], entry.get("split"), entry.get("seed"))
        merged[key] = {**entry, **merged[key]} if key in merged else dict(entry)
    return list(merged.values())


def policy_trained_on(policy: str | Path) -> list[dict]:
    """Every catalog and split the policy folder `policy` trained on, first run first, without repeats:
    `[{"catalog", "split", "seed"[, "tools_digest"]}, ...]`, read from its `manifest.json`
    (`manifest_trained_on`). A policy never trained (a fresh one) gives []."""
    path = Path(policy) / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise BenchmarkError(f"{path}: not a readable policy manifest ({e})") from None
    return manifest_trained_on(manifest, {Path(policy).resolve()})


def manifest_trained_on(manifest: dict, seen: set[Path] | None = None) -> list[dict]:
    """What a policy manifest (or a loaded policy's `info`) says it trained on, as in `policy_trained_on`:

    - `trained_on`, which training writes (each run adds its catalog's train split to its start policy's list);
    - for policies trained before that field: the manifest's own `benchmark` and `split_seed`, every run of
      `shipped.lineage`, and, while that folder exists, the policy its `config.init` started from.

    - what the reranker its `rerank` names was trained on (`autotool.rerank.reranker_trained_on`): serving
      reads it too.

    Calibration (`calibrated`, a fit of the head's four weights on val tools) is not training and is not listed.
    """
    entries: list[dict] = []
    seen = set(seen or ())
    rerank = manifest.get("rerank")
    if isinstance(rerank, dict) and isinstance(rerank.get("reranker"), str):
        from autotool.rerank import reranker_trained_on

        entries = merge_trained_on(reranker_trained_on(rerank["reranker"]))
    while manifest is not None:
        runs = [*((manifest.get("shipped") or {}).get("lineage") or []), manifest]  # first to last
        legacy = [
            {"catalog": run["benchmark"], "split": "train", "seed": run.get("split_seed")}
            for run in runs
            if run.get("benchmark")
        ]
        entries = merge_trained_on(manifest.get("trained_on") or [], legacy, entries)  # ancestors come first
        init = (manifest.get("config") or {}).get("init")
        manifest = None
        if init and (Path(init) / "manifest.json").is_file() and Path(init).resolve() not in seen:
            seen.add(Path(init).resolve())
            try:
                manifest = json.loads((Path(init) / "manifest.json").read_text())
            except (OSError, ValueError) as e:
                raise BenchmarkError(f"{Path(init) / 'manifest.json'}: not a readable policy manifest ({e})") from None
    return entries


def trained_catalogs(policy: str | Path) -> set[str]:
    """The names of the catalogs the policy folder `policy` trained on (for the shipped policy: metatool and
    seal_tools)."""
    return {e["catalog"] for e in policy_trained_on(policy)}


def entries_of_bench(entries: list[dict], bench: Benchmark) -> list[dict]:
    """The `trained_on` entries that are `bench`: the same catalog name, or the same digest of tool names."""
    digest = _tools_digest(bench)
    return [e for e in entries if e.get("catalog") == bench.name or e.get("tools_digest") == digest]


def trained_on_bench(policy: str | Path, bench: Benchmark) -> list[dict]:
    """The entries of `policy_trained_on(policy)` that are `bench`. Empty when the policy never trained on it."""
    return entries_of_bench(policy_trained_on(policy), bench)


def embedder_trained_on_bench(embedder: str, bench: Benchmark) -> list[dict]:
    """The entries of `toolbank.embed.embedder_trained_on(embedder)` (what an adapter was fine-tuned on) that
    are `bench`. Empty for the stock model and for an adapter that never saw the catalog."""
    from toolbank.embed import embedder_trained_on

    return entries_of_bench(embedder_trained_on(embedder), bench)


def embedder_saw(embedder: str, bench: Benchmark, split_names: Sequence[str], seed: int) -> dict | None:
    """The entry of what `embedder` was fine-tuned on (`embedder_trained_on_bench`) that keeps splits
    `split_names` of `bench`, under split `seed`, from being held out from it: trained on every tool (any split),
    on another seed's split, or on this seed's train split when `all` or `train` is asked for. None when every
    split asked for is held out."""
    for entry in embedder_trained_on_bench(embedder, bench):
        if not held_out_from(entry, seed) or {"all", "train"} & set(split_names):
            return entry
    return None


def held_out_from(entry: dict, seed: int) -> bool:
    """Whether split `seed`'s val and test tools were held out from the training that `entry` records: it trained
    on that seed's train split only."""
    return entry.get("split") == "train" and entry.get("seed") == seed


def benchmark_bank(bench: Benchmark, embedder: str = "stock", root: Path | None = None) -> ToolBank:
    """A bank holding the whole catalog of `bench`, cached under `$AUTOTOOL_HOME/eval/banks/`.

    Unseen tools compete with seen ones: every tool of the benchmark is in it. Reused across runs; only
    new or changed tool texts are embedded.
    """
    from toolbank import load_embedder

    model = load_embedder(embedder)
    slug = hashlib.sha1(f"{bench.folder.resolve()}|{model.id}".encode()).hexdigest()[:8]
    path = (root or autotool_home() / "eval" / "banks") / f"{bench.name}-{slug}"
    bank = ToolBank.open(path, embedder=model)
    bank.add(bench.tools, replace=True, progress=True)
    extra = {t.qualified_name for t in bank} - {t.qualified_name for t in bench.tools}  # tools the catalog dropped
    if extra:
        bank.remove(sorted(extra))
    return bank


def step_input(bank: ToolBank, step: Step):
    """The step as the policy reads it: the request, the earlier steps' texts (gold calls when known) and the
    tools they called, which it may not choose again."""
    from autotool.prompts import StepRecord, history
    from autotool.selection import StepInput

    earlier = [StepRecord("", c["tool"], c.get("args") or {}) for c in (step.query.calls or ())[: step.index]]
    if not step.query.calls:
        earlier = [StepRecord("", name, {}) for name in step.context]
    called = tuple(bank.get(name).qualified_name for name in step.context)  # as the bank names them (ns/name)
    return StepInput(step.query.text, history(earlier, bank.get), called)
