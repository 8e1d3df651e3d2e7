"""Dense hit@1 per request of the `tools` recipe trained with ComplexFuncBench minus the shipped `tools` embedder, on
the same requests (paired over requests), from the two judge records run.sh writes.

    python experiments/2026-12-07-complexfuncbench-tools-embedder/paired.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))

from autotool.metrics import paired_bootstrap  # noqa: E402

ROLES = {"apibank": "validation", "toolalpaca": "validation", "seal_tools:all:1000": "foreign, chooses nothing"}


def measure(arm: str, spec: str) -> dict:
    return json.loads((HERE / f"dense-{arm}" / "results.json").read_text())["catalogs"][spec]["measures"]["per-query"]


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def main() -> None:
    lines = [
        "# Dense hit@1 per request: the shipped `tools` embedder, and its recipe with ComplexFuncBench added",
        "",
        "| catalog (requests) | role | BM25 | stock | shipped | with | with minus shipped (gained, lost) |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    results, validation = {}, {"shipped": [], "with-cfb": [], "stock": []}
    for spec, role in ROLES.items():
        shipped, with_cfb = measure("shipped", spec), measure("with-cfb", spec)
        assert shipped["ids"] == with_cfb["ids"], f"{spec}: not the same requests"
        assert shipped["per_item"]["dense-stock"] == with_cfb["per_item"]["dense-stock"], f"{spec}: stock differs"
        a, b = with_cfb["per_item"]["dense-tuned"], shipped["per_item"]["dense-tuned"]
        stock, bm25 = with_cfb["per_item"]["dense-stock"], with_cfb["per_item"]["bm25"]
        p = paired_bootstrap(a, b, groups=shipped["ids"])
        gained, lost = sum(x > y for x, y in zip(a, b)), sum(x < y for x, y in zip(a, b))
        results[spec] = {"bm25": mean(bm25), "stock": mean(stock), "shipped": mean(b), "with-cfb": mean(a), "paired": p}
        lines.append(
            f"| {spec} ({len(a)}) | {role} | {mean(bm25):.3f} | {mean(stock):.3f} | {mean(b):.3f} | {mean(a):.3f} "
            f"| {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}] ({gained}, {lost}) |"
        )
        if role == "validation":
            for arm, hits in (("shipped", b), ("with-cfb", a), ("stock", stock)):
                validation[arm].append(mean(hits))
    v = {arm: mean(means) for arm, means in validation.items()}
    results["validation mean"] = v
    lines.append(
        f"| validation mean | chooses | | {v['stock']:.3f} | {v['shipped']:.3f} | {v['with-cfb']:.3f} "
        f"| {v['with-cfb'] - v['shipped']:+.3f} |"
    )
    (HERE / "paired.json").write_text(json.dumps(results, indent=1) + "\n")
    (HERE / "paired.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
