"""Dense hit@1 per request of the embedder trained with ComplexFuncBench minus the same recipe without it, on the
same requests (paired over requests): run.sh's judge record against the committed records of the recipe without
ComplexFuncBench (API-Bank and ToolAlpaca: 2026-12-04-name-word-dropout's dropout-0 arm; the 1,000 MetaTool
requests: 2026-12-06-loo-metatool-1000's judge, whose embedder is that recipe trained again).

    python experiments/2026-12-07-complexfuncbench-embedder/paired.py [--without dense-without]

With `--without DIR`, the arm without ComplexFuncBench is this record's own judge folder DIR (without.sh: that recipe
trained again on this record's code and libraries), and the tables go to paired-DIR.md and .json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))

from autotool.metrics import paired_bootstrap  # noqa: E402

ROLES = {"apibank": "validation", "toolalpaca": "validation", "metatool:all:1000": "left out, chooses nothing"}
EXPERIMENTS = HERE.parent
WITHOUT = {
    "apibank": EXPERIMENTS / "2026-12-04-name-word-dropout/dense-dropout-0/results.json",
    "toolalpaca": EXPERIMENTS / "2026-12-04-name-word-dropout/dense-dropout-0/results.json",
    "metatool:all:1000": EXPERIMENTS / "2026-12-06-loo-metatool-1000/judge-1000/results.json",
}


def measure(arm: str, spec: str, without: str | None = None) -> dict:
    path = HERE / f"dense-{arm}" / "results.json"
    if arm == "without":
        path = HERE / without / "results.json" if without else WITHOUT[spec]
    return json.loads(path.read_text())["catalogs"][spec]["measures"]["per-query"]


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def main(without: str | None = None) -> None:
    lines = [
        "# Dense hit@1 per request, with ComplexFuncBench in the embedder's training and without",
        "",
        "| catalog (requests) | role | stock | without | with | with minus without (gained, lost) |",
        "|---|---|---:|---:|---:|---|",
    ]
    results, validation = {}, {"without": [], "with-cfb": [], "stock": []}
    for spec, role in ROLES.items():
        base, with_cfb = measure("without", spec, without), measure("with-cfb", spec)
        assert base["ids"] == with_cfb["ids"], f"{spec}: not the same requests"
        assert base["per_item"]["dense-stock"] == with_cfb["per_item"]["dense-stock"], f"{spec}: stock differs"
        a, b = with_cfb["per_item"]["dense-tuned"], base["per_item"]["dense-tuned"]
        stock = with_cfb["per_item"]["dense-stock"]
        p = paired_bootstrap(a, b, groups=base["ids"])
        gained, lost = sum(x > y for x, y in zip(a, b)), sum(x < y for x, y in zip(a, b))
        results[spec] = {"stock": mean(stock), "without": mean(b), "with-cfb": mean(a), "paired": p}
        lines.append(
            f"| {spec} ({len(a)}) | {role} | {mean(stock):.3f} | {mean(b):.3f} | {mean(a):.3f} "
            f"| {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}] ({gained}, {lost}) |"
        )
        if role == "validation":
            for arm, hits in (("without", b), ("with-cfb", a), ("stock", stock)):
                validation[arm].append(mean(hits))
    v = {arm: mean(means) for arm, means in validation.items()}
    results["validation mean"] = v
    lines.append(
        f"| validation mean | chooses | {v['stock']:.3f} | {v['without']:.3f} | {v['with-cfb']:.3f} "
        f"| {v['with-cfb'] - v['without']:+.3f} |"
    )
    name = f"paired-{without}" if without else "paired"
    (HERE / f"{name}.json").write_text(json.dumps(results, indent=1) + "\n")
    (HERE / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[sys.argv.index("--without") + 1] if "--without" in sys.argv else None)
