"""Write an evaluation: results.json, results.md (tables), results.png (grouped bars), steps.csv (per step)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from eval.harness import SELECTION_METRICS
from eval.methods import FILLS_ARGUMENTS

CALL_METRICS = ("schema_valid", "args_exact", "r_correct", "format_error")


def _unreachable(split: dict) -> list[str]:
    """A note under a split's heading when some of its steps call a tool an earlier step called: no method may
    choose that tool again, so those steps are misses for all (results from before the field: no note)."""
    n = split.get("repeating", 0)
    if not n:
        return []
    return [
        f"{n} of the {split['n']} steps call a tool an earlier step of their request called. No method may choose "
        f"it again, so hit@1 here is at most {(split['n'] - n) / split['n']:.3f}.",
        "",
    ]


def _fmt(x: float, digits: int = 3) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def drops(splits: list[dict]) -> dict[str, dict[str, float]]:
    """Per method, seen-test minus unseen-test for each selection metric (when both splits ran)."""
    by_name = {s["split"]: s for s in splits}
    if not {"seen-test", "unseen-test"} <= set(by_name):
        return {}
    seen, unseen = by_name["seen-test"]["methods"], by_name["unseen-test"]["methods"]
    return {m: {k: seen[m][k] - unseen[m][k] for k in SELECTION_METRICS} for m in seen if m in unseen}


def markdown(results: dict) -> str:
    lines = [
        f"# {results['bench']}: tool selection",
        "",
        f"Command: `{results['command']}`",
        "",
        f"Split seed {results['seed']}; the whole catalog ({results['n_tools']} tools) is in the bank; "
        + (
            "one call per request with no context, a hit when the first choice is any of its gold tools."
            if results.get("measure") == "per-request"
            else "multi-tool queries count one step per call."
        ),
        "",
    ]
    if results.get("excluded_runs"):
        lines += [
            "Queries scored by " + ", ".join(f"`{r}`" for r in results["excluded_runs"]) + " were left out "
            "before sampling ("
            + ", ".join(f"{n} on {s}" for s, n in results["excluded_queries"].items())
            + "): a disjoint sample.",
            "",
        ]
    for split in results["splits"]:
        methods = split["methods"]
        extra = () if split.get("measure") == "per-request" else CALL_METRICS if FILLS_ARGUMENTS & set(methods) else ()
        lines += [
            f"## {split['split']}: {split['n_queries']} queries, {split['n']} steps",
            "",
            *_unreachable(split),
            "| method | " + " | ".join(SELECTION_METRICS + extra) + " | p50 ms | p95 ms |",
            "|---|" + "---:|" * (len(SELECTION_METRICS) + len(extra) + 2),
        ]
        for name, m in methods.items():
            cells = [_fmt(m.get(k, math.nan)) for k in SELECTION_METRICS + extra]
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {_fmt(m['p50_ms'], 1)} | {_fmt(m['p95_ms'], 1)} |")
        if split.get("versus_best"):
            best = split["best_baseline"]
            lines += [
                "",
                f"hit@1 minus the best of the baselines that ran, {best} ({_fmt(methods[best]['hit@1'])}), "
                "95% bootstrap interval:",
                "",
            ]
            lines += [
                f"- {name}: {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]"
                for name, p in split["versus_best"].items()
            ]
        if split["paired"]:
            lines += [
                "",
                "Paired differences (A - B), 95% bootstrap interval over queries:",
                "",
                "| A | B | metric | mean | 95% CI |",
                "|---|---|---|---:|---|",
            ]
            for p in split["paired"]:
                lines.append(
                    f"| {p['a']} | {p['b']} | {p['metric']} | {p['mean']:+.3f} | "
                    f"[{p['ci_low']:+.3f}, {p['ci_high']:+.3f}] |"
                )
        lines.append("")
    if results.get("drop"):
        lines += [
            "## seen-test minus unseen-test",
            "",
            "| method | " + " | ".join(SELECTION_METRICS) + " |",
            "|---|" + "---:|" * len(SELECTION_METRICS),
        ]
        for name, d in results["drop"].items():
            lines.append(f"| {name} | " + " | ".join(f"{d[k]:+.3f}" for k in SELECTION_METRICS) + " |")
        lines.append("")
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    splits = results["splits"]
    most = max((len(split["methods"]) for split in splits), default=1)
    panel = max(5.5, 1.5 + 0.4 * most * len(SELECTION_METRICS))  # inches: room for each bar's label
    fig, axes = plt.subplots(1, len(splits), figsize=(panel * len(splits), 4), squeeze=False, sharey=True)
    for ax, split in zip(axes[0], splits):
        names = list(split["methods"])
        width = 0.8 / max(1, len(names))
        x = np.arange(len(SELECTION_METRICS))
        for i, name in enumerate(names):
            values = [split["methods"][name][k] for k in SELECTION_METRICS]
            bars = ax.bar(x + i * width - 0.4 + width / 2, values, width, label=name)
            ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1, rotation=90 if len(names) > 4 else 0)
        ax.set_xticks(x, SELECTION_METRICS)
        ax.set_ylim(0, 1.12)
        ax.set_title(f"{results['bench']} {split['split']} ({split['n']} steps)")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("score")
    axes[0][-1].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(results: dict, out: Path) -> None:
    """Write results.json (no per-step arrays), steps.csv, results.md and results.png into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "steps.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["split", "method", "step", "metric", "value"])
        for split in results["splits"]:
            for name, per_step in split["per_step"].items():
                for metric, values in per_step.items():
                    writer.writerows(
                        [split["split"], name, sid, metric, v] for sid, v in zip(split["step_ids"], values)
                    )
    # The ids of the queries scored, not the per-step arrays: enough for `--exclude-run` where steps.csv
    # (large, not committed) is absent.
    slim = {
        **results,
        "splits": [
            {
                **{k: v for k, v in s.items() if k not in ("per_step", "step_ids", "query_ids")},
                "queries": sorted(set(s["query_ids"])),
            }
            for s in results["splits"]
        ],
    }
    (out / "results.json").write_text(json.dumps(slim, indent=2) + "\n")
    (out / "results.md").write_text(markdown(results))
    plot(results, out / "results.png")


def evaluated_queries(folder: Path, bench: str, split: str) -> set[str]:
    """The ids of the queries of benchmark `bench` that the evaluation written to `folder` scored on `split`.

    Read from its results.json (field `queries` of the split), or from its steps.csv for outputs written
    before results.json listed them. Raises ValueError if `folder` is not such an output.
    """
    path, meta = Path(folder) / "steps.csv", Path(folder) / "results.json"
    if not meta.is_file():
        raise ValueError(f"{folder}: not an evaluation output folder (expected results.json)")
    try:
        results = json.loads(meta.read_text())
    except ValueError as e:
        raise ValueError(f"{meta}: not valid JSON ({e})") from None
    if (ran := results.get("bench")) != bench:
        raise ValueError(f"{meta}: field 'bench' is {ran!r}, expected {bench!r} (the benchmark being evaluated)")
    scored = [s for s in results.get("splits", []) if s.get("split") == split]
    if not scored:
        return set()
    if "queries" in scored[0]:
        return set(scored[0]["queries"])
    if not path.is_file():
        raise ValueError(
            f"{meta}: split {split!r} has no field 'queries' (written before it existed) and there is "
            f"no steps.csv beside it to read them from"
        )
    with open(path, newline="") as f:
        return {row["step"].rpartition("#")[0] for row in csv.DictReader(f) if row["split"] == split}
