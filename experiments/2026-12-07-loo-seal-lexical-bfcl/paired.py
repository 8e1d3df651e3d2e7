"""Fast mode with the l fitted on API-Bank, ToolAlpaca and BFCL against the same recipe at l = 0.05 (fitted on
API-Bank and ToolAlpaca alone), on the same Seal-Tools requests and steps, paired over requests.

    python experiments/2026-12-07-loo-seal-lexical-bfcl/paired.py

The l = 0.05 figures are the earlier records' committed per-item hits, made by the same served path with the same
models (the judged requests and steps are checked to be the same, in the same order):
- 1,000 requests, per request: 2026-12-07-loo-seal-reason (explain and l_later move no first step);
- 1,000 requests, per step: 2026-12-06-dense-explain-away's check (explain 0.5, l_later 0.1);
- 904 new requests, per step: its served run (explain 0.5); per request: its per-request run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from autotool.metrics import paired_bootstrap  # noqa: E402

EXPLAIN = ROOT / "experiments/2026-12-06-dense-explain-away"
NEW = "seal_tools, 904 new requests"


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def judged(path: Path, spec: str, measure: str) -> tuple[list[str], dict]:
    m = read(path)["catalogs"][spec]["measures"][measure]
    return m["ids"], m["per_item"]


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def cell(p: dict) -> str:
    return f"{p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]"


def main() -> None:
    ids, per_item = judged(
        ROOT / "experiments/2026-12-07-loo-seal-reason/judge-1000/results.json", "seal_tools:all:1000", "per-query"
    )
    check = read(EXPLAIN / "check/results.json")["seal_tools:all:1000"]
    per_request = read(EXPLAIN / "per-request/results.json")
    served = read(EXPLAIN / "served/results.json")["curves"][NEW]
    before = {
        ("1,000 requests", "per-query"): (ids, per_item["fast"]),
        ("1,000 requests", "per-step"): (check["ids"], check["per_item"]["fast alpha=0.5"]),
        ("904 new requests", "per-query"): (per_request["ids"], per_request["per_item"]["fast"]),
        ("904 new requests", "per-step"): (served["ids"], served["per_item"]["fast alpha=0.5"]),
    }
    after = {
        ("1,000 requests", m): judged(HERE / "judge-1000/results.json", "seal_tools:all:1000", m)
        for m in ("per-query", "per-step")
    }
    after |= {
        ("904 new requests", m): judged(HERE / "judge-904/results.json", NEW, m) for m in ("per-query", "per-step")
    }
    lines = [
        "# Fast mode at the l fitted with BFCL against l = 0.05, same requests (paired over requests)",
        "",
        "| requests, measure | items | BM25 | l = 0.05 | fitted l | fitted minus 0.05 | fitted minus BM25 | fitted minus the best stock baseline |",
        "|---|---:|---:|---:|---:|---|---|---|",
    ]
    results = {}
    for key, (ids, old) in before.items():
        new_ids, hits = after[key]
        assert new_ids == ids, f"{key}: not the same items"
        best = max(("bm25", "dense-stock", "hybrid-stock"), key=lambda m: sum(hits[m]))
        d = {
            "minus 0.05": paired_bootstrap(hits["fast"], old, groups=ids),
            "minus bm25": paired_bootstrap(hits["fast"], hits["bm25"], groups=ids),
            "minus best": paired_bootstrap(hits["fast"], hits[best], groups=ids),
        }
        results[", ".join(key)] = {"best": best, "paired": d}
        lines.append(
            f"| {key[0]}, {key[1]} | {len(ids)} | {mean(hits['bm25']):.3f} | {mean(old):.3f} | {mean(hits['fast']):.3f} "
            f"| {cell(d['minus 0.05'])} | {cell(d['minus bm25'])} | {cell(d['minus best'])} ({best}) |"
        )
    (HERE / "paired.json").write_text(json.dumps(results, indent=1) + "\n")
    (HERE / "paired.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
