"""Compare the policies of a two-process and a one-process run (run.sh): how far each moved from its start,
how far apart they end, and the cosine between their updates. `--make-catalog DIR` writes the tiny catalog
(the one tests/training/test_phases.py uses).

    python experiments/2026-12-01-two-processes/compare.py TWO_RUN ONE_RUN
"""

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

TOOLS = {
    "get_weather": "Current weather and temperature for a city.",
    "get_forecast": "Weather forecast for the next days in a city.",
    "pdf_to_text": "Convert a PDF document to plain text.",
    "send_email": "Send an email message to a recipient.",
    "translate": "Translate text from one language to another.",
    "calculator": "Evaluate arithmetic expressions and formulas.",
    "stock_price": "Latest stock price of a company.",
    "news_search": "Search recent news articles on a topic.",
}

if sys.argv[1] == "--make-catalog":
    folder = Path(sys.argv[2])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools.jsonl").write_text(
        "".join(json.dumps({"name": n, "description": d, "parameters": {}}) + "\n" for n, d in TOOLS.items())
    )
    queries = [
        {"id": f"{n}-{i}", "query": f"{d.lower()} please, case {i}", "gold_tools": [n], "gold_args": None}
        for n, d in TOOLS.items()
        for i in range(6)
    ]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    sys.exit(0)

two, one = Path(sys.argv[1]), Path(sys.argv[2])
for part in ("adapter/adapter_model.safetensors", "anchor_head.safetensors"):
    start = load_file(one / "policy-initial" / part)
    assert all(torch.equal(start[k], load_file(two / "policy-initial" / part)[k]) for k in start)
    a, b = load_file(two / "policy-sft" / part), load_file(one / "policy-sft" / part)
    da = torch.cat([(a[k] - start[k]).flatten() for k in start])
    db = torch.cat([(b[k] - start[k]).flatten() for k in start])
    print(
        f"{part}: moved max |two| {da.abs().max():.2e}, |one| {db.abs().max():.2e}; "
        f"max |two - one| {(da - db).abs().max():.2e}; cosine of the updates {float(da @ db / (da.norm() * db.norm())):.3f}"
    )
