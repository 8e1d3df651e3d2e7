"""Set a language model into a fast-mode policy: the judged policy is the language model's folder with the fast
policy's anchor head, reranker, embedder and format. b stays the fast head's until training.fit_rationale refits it.

    python experiments/2026-12-07-loo-seal-reason-per-step/assemble.py LM_FOLDER FAST_POLICY OUT

It checks the head this record declares (explain 0.5, l_later 0.1) and that both heads have W = 0 (no hidden-state
part in the anchor), so only the rationale and b separate reason mode from fast mode.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from safetensors.torch import load_file


def main(lm: Path, fast: Path, out: Path) -> None:
    head, trained = load_file(fast / "anchor_head.safetensors"), load_file(lm / "anchor_head.safetensors")
    assert float(head["W.weight"].abs().sum()) == 0 and float(trained["W.weight"].abs().sum()) == 0, "W is not zero"
    assert round(float(head["explain"]), 6) == 0.5 and round(float(head["lexical_later"]), 6) == 0.1, "not this head"
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(lm, out)
    shutil.copy(fast / "anchor_head.safetensors", out / "anchor_head.safetensors")
    m, f = json.loads((out / "manifest.json").read_text()), json.loads((fast / "manifest.json").read_text())
    for key in ("format_version", "embedder", "also_reads", "rerank"):
        m[key] = f[key]
    m["head"] = (
        "the 2026-12-06-dense-explain-away product head (l = 0.05, l_later = 0.1, explain 0.5, g = 8.9212, "
        "c fitted); b refitted"
    )
    (out / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")


if __name__ == "__main__":
    main(*(Path(a) for a in sys.argv[1:4]))
