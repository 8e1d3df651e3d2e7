"""Fit a policy's rerank weight c on foreign validation catalogs, and write `rerank` into its manifest.

    python -m training.fit_rerank autotool/default_policy --bench apibank,toolalpaca --out FOLDER --write

For each request of each catalog (`name[:split[:limit]]`, split `all` by default: catalogs the policy never
trained on), `--mode`'s (fast by default) `--top` best candidates come from the served path without reranking
(`select_steps(..., mode=MODE, arguments=False, rerank=False)`), and the reranker scores each (request, tool
text). Each c of the grid reorders them as serving will (`autotool.rerank.reranked`); c is the one with the best
mean hit@1 over the catalogs (one call per request, any gold tool a hit; ties go to the smaller c). c = 0 is the
policy without reranking, so a reranker that does not help is fitted to 0.

`--write` records `rerank: {reranker, top, weight, fitted}` in the policy's manifest (replaced atomically);
`--out` gets `results.md` (the grid) and `scores.json` (every candidate's probability and score).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import numpy as np
from tqdm import tqdm

from autotool.benchmarks import Benchmark, Query, benchmark_bank
from autotool.metrics import paired_bootstrap
from autotool.rerank import SHIPPED_RERANKER, RerankerError, load_reranker, reranked
from autotool.select import MODES, select_steps
from autotool.selection import StepInput
from training.cli import CommandError, doc_help, run
from training.fits import catalogs, embedder_option, load_policy, record
from training.ship import provenance

GRID = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0)


def scored(
    policy_path: Path,
    bench: Benchmark,
    queries: list[Query],
    reranker,
    top: int,
    embedder: str = "tools",
    batch: int = 32,
    mode: str = "fast",
) -> list[dict]:
    """Per request of `queries`: its gold tools, `mode`'s `top` candidates (on a bank of `bench` built with
    `embedder`), their probabilities and the reranker's scores."""
    bank = benchmark_bank(bench, embedder)
    policy = load_policy(policy_path, bank, embedder)
    rows = []
    for start in tqdm(range(0, len(queries), batch), desc=f"{bench.name}: candidates and scores", unit="batch"):
        chunk = queries[start : start + batch]
        chosen = select_steps(
            policy,
            bank,
            [StepInput(q.text) for q in chunk],
            k=top,
            mode=mode,
            arguments=False,
            min_cosine=0,
            rerank=False,
        )
        for q, s in zip(chunk, chosen):
            rows.append(
                {
                    "id": q.id,
                    "gold": list(q.gold_tools),
                    "candidates": [t.name for t, _ in s.candidates],
                    "p": [p for _, p in s.candidates],
                    "score": reranker.scores(q.text, [t.text for t, _ in s.candidates]).tolist(),
                }
            )
    return rows


def hits(rows: list[dict], weight: float) -> list[float]:
    """Hit@1 of each request when its candidates are reordered at `weight`."""
    out = []
    for r in rows:
        p = reranked(np.array(r["p"]), np.array(r["score"]), weight) if weight else np.array(r["p"])
        out.append(float(r["candidates"][int(np.argmax(p))] in r["gold"]))  # argmax: the first of the best
    return out


@click.command(help=doc_help(__doc__), context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("policy_path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--bench", default="apibank,toolalpaca", show_default=True, help="Comma-separated catalog specs.")
@click.option("--reranker", "reranker_spec", default=SHIPPED_RERANKER, show_default=True, help="Id or folder.")
@embedder_option
@click.option("--top", type=click.IntRange(2, 64), default=5, show_default=True, help="Candidates reordered.")
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="fast",
    show_default=True,
    help="The mode whose candidates are reordered (reason writes a rationale a request: minutes, not seconds).",
)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="Folder for the grid.")
@click.option("--write", is_flag=True, help="Record the fitted `rerank` in the policy's manifest.")
def main(policy_path, bench, reranker_spec, embedder, top, mode, out, write):
    embedder_id, benches = catalogs(policy_path, bench, embedder)
    try:
        reranker = load_reranker(reranker_spec)
    except RerankerError as error:
        raise CommandError(f"--reranker: {error}") from None
    specs = list(benches)
    began = time.perf_counter()
    rows = {spec: scored(policy_path, *benches[spec], reranker, top, embedder, mode=mode) for spec in specs}
    seconds = time.perf_counter() - began
    grid = {c: {spec: float(np.mean(hits(r, c))) for spec, r in rows.items()} for c in GRID}
    weight = max(GRID, key=lambda c: (np.mean(list(grid[c].values())), -c))
    lines = [
        f"# Rerank weight for {policy_path}",
        "",
        f"Reranker `{reranker_spec}` over {mode} mode's best {top} (embedder `{embedder}`); hit@1 per request "
        f"(paired 95% interval against c = 0 at the fitted c = {weight:g}). {seconds:.0f} s for "
        f"{sum(map(len, rows.values()))} requests.",
        "",
        "| c | " + " | ".join(specs) + " | mean |",
        "|---:|" + "---:|" * (len(specs) + 1),
    ]
    for c in GRID:
        lines.append(
            f"| {c:g} | "
            + " | ".join(f"{grid[c][s]:.3f}" for s in specs)
            + f" | {np.mean(list(grid[c].values())):.3f} |"
        )
    lines.append("")
    for spec, r in rows.items():
        p = paired_bootstrap(hits(r, weight), hits(r, 0.0), groups=[x["id"] for x in r])
        lines.append(f"- {spec}: {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]")
    report = "\n".join(lines) + "\n"
    click.echo(report)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.md").write_text(report)
        (out / "scores.json").write_text(json.dumps(rows) + "\n")
    if write:
        fitted = {
            "on": specs,
            "embedder": embedder_id,
            "mode": mode,
            "hit@1": grid[weight],
            "hit@1_without": grid[0.0],
            "grid": list(GRID),
            **provenance(),
        }
        record(policy_path, rerank={"reranker": reranker_spec, "top": top, "weight": weight, "fitted": fitted})
        click.echo(f"wrote rerank (c = {weight:g}) into {policy_path / 'manifest.json'}", err=True)


if __name__ == "__main__":
    raise SystemExit(run(main))
