"""Each foreign validation catalog judged with the weights fitted on the other one alone (cross-fitting).

    .venv/bin/python experiments/2026-12-05-cross-fit/crossfit.py > experiments/2026-12-05-cross-fit/results.md

The shipped rerank weight c and rationale weight b were fitted on API-Bank and ToolAlpaca together, so the
served figures on them are validation figures. Here catalog X is scored with c (and then b) chosen on the other
catalog alone, by the rule the fits use (`fitted`), from the committed per-request grids:
- c: `2026-12-02-rerank-served/fit/scores.json` (fast mode's best 5 of every request, their probabilities and
  reranker scores), reordered by `training.fit_rerank.hits`, the function the fit scores with;
- b at that c: `2026-12-03-rationale-weight-foreign/fit/rationales.json` (c = 1) or this record's
  `fit-rationale-c0.5/rationales.json` (c = 0.5), each request's hit at every b.
Paired 95% bootstrap intervals (2,000 resamples over requests) against the best stock baseline of
`2026-12-02-rerank-served/fast/results.json` (the same requests, per request).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from autotool.metrics import paired_bootstrap  # noqa: E402
from training.fit_rationale import GRID as B_GRID  # noqa: E402
from training.fit_rerank import GRID as C_GRID  # noqa: E402
from training.fit_rerank import hits  # noqa: E402

SERVED = HERE.parent / "2026-12-02-rerank-served"
RATIONALES = {  # each request's hit at every b, by the rerank weight c they were scored at
    1.0: HERE.parent / "2026-12-03-rationale-weight-foreign" / "fit" / "rationales.json",
    0.5: HERE / "fit-rationale-c0.5" / "rationales.json",
}
CATALOGS = ("apibank", "toolalpaca")
BASELINES = ("bm25", "dense-stock", "hybrid-stock")


def mean(values) -> float:
    return sum(values) / len(values)


def fitted(grid, hits_at, catalogs) -> float:
    """The grid value with the best mean over `catalogs` of each catalog's hit@1 (`hits_at(catalog, value)`: its
    per-request hits), ties to the smaller value: the rule of training.fit_rerank and training.fit_rationale."""
    return max(grid, key=lambda v: (round(mean([mean(hits_at(o, v)) for o in catalogs]), 9), -v))


def aligned(rows: list[dict], ids: list[str], key: str = "id") -> list[dict]:
    by_id = {r[key]: r for r in rows}
    if set(by_id) != set(ids):
        raise SystemExit("the grids and the baselines do not hold the same requests")
    return [by_id[i] for i in ids]


def main() -> None:
    served = json.loads((SERVED / "fast" / "results.json").read_text())["catalogs"]
    measures = {c: served[c]["measures"]["per-query"] for c in CATALOGS}
    ids = {c: measures[c]["ids"] for c in CATALOGS}
    scores = json.loads((SERVED / "fit" / "scores.json").read_text())
    scores = {c: aligned(scores[c], ids[c]) for c in CATALOGS}
    rationales = {}
    for c, path in RATIONALES.items():
        rows = json.loads(path.read_text())
        rationales[c] = {x: aligned(rows[x], ids[x]) for x in CATALOGS}
    fast_hits = {x: {c: hits(scores[x], c) for c in C_GRID} for x in CATALOGS}
    reason_hits = {  # (c, b) -> per-request hits
        c: {x: {b: [r["hit"][format(b, "g")] for r in rationales[c][x]] for b in B_GRID} for x in CATALOGS}
        for c in RATIONALES
    }
    # the grids reproduce what is served: fast at c = 1, reason at c = 1 and b = 0.2 (judge.py's served runs)
    reason_served = json.loads(
        (HERE.parent / "2026-12-03-rationale-weight-foreign" / "reason" / "results.json").read_text()
    )
    for x in CATALOGS:
        assert fast_hits[x][1.0] == measures[x]["per_item"]["fast"], x
        served_reason = reason_served["catalogs"][x]["measures"]["per-query"]
        assert served_reason["ids"] == ids[x] and served_reason["per_item"]["reason"] == reason_hits[1.0][x][0.2], x
    same = {
        x: sum(a["rationale"] == b["rationale"] for a, b in zip(*(rationales[c][x] for c in RATIONALES)))
        for x in CATALOGS
    }

    lines = [
        "# Cross-fitting: each foreign validation catalog judged with weights fitted on the other alone",
        "",
        "Command: `.venv/bin/python experiments/2026-12-05-cross-fit/crossfit.py` (after `run.sh`'s rationale grid).",
        "Per request, hit@1; intervals: paired 95% bootstrap against the best stock baseline.",
        "",
        "| judged on | best stock baseline | fitted on | c | b | fast | fast minus baseline | reason | reason minus baseline |",
        "|---|---|---|---:|---:|---:|---|---:|---|",
    ]
    for x in CATALOGS:
        (other,) = [o for o in CATALOGS if o != x]
        per_item = measures[x]["per_item"]
        base = max(BASELINES, key=lambda m: mean(per_item[m]))
        for label, fit_on in (("both (served)", CATALOGS), (f"{other} alone", (other,))):
            c = fitted(C_GRID, lambda o, v: fast_hits[o][v], fit_on)
            if c not in reason_hits:
                raise SystemExit(f"no rationale grid at c = {c}; run.sh makes the one at 0.5")
            b = fitted(B_GRID, lambda o, v: reason_hits[c][o][v], fit_on)
            fast, reason = fast_hits[x][c], reason_hits[c][x][b]
            cells = []
            for row in (fast, reason):
                p = paired_bootstrap(row, per_item[base], groups=ids[x])
                cells += [f"{mean(row):.3f}", f"{p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]"]
            lines.append(
                f"| {x} ({len(ids[x])}) | {base} {mean(per_item[base]):.3f} | {label} | {c:g} | {b:g} | "
                + " | ".join(cells)
                + " |"
            )
    lines += [
        "",
        "Each catalog alone fits: "
        + "; ".join(f"{x}: c = {fitted(C_GRID, lambda o, v: fast_hits[o][v], (x,)):g}" for x in CATALOGS)
        + ". The rationale grids at c = 1 and c = 0.5 were written in two runs; the policy wrote the same "
        + "rationale for "
        + ", ".join(f"{same[x]} of {len(ids[x])} {x} requests" for x in CATALOGS)
        + ".",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
