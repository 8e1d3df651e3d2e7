"""Copy a trained policy folder into the package as the default policy, recording how it was made.

    python -m training.ship runs/default-seal_tools/policy-sft autotool/default_policy \
        --command "make train-default" --data "metatool train, then seal_tools train"

The manifest gains `shipped`: the data, the command, the commit, the date, and the chain of runs that led to
the policy (each run's stage, benchmark, split seed and config, following `config.init` back to the start).
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path


def lineage(policy: Path) -> list[dict]:
    """The runs that made `policy`, first to last, from each manifest's `config.init` (and, where that leads
    to a shipped policy, the lineage recorded in its manifest)."""
    chain, seen = [], set()
    while policy and policy.resolve() not in seen:
        seen.add(policy.resolve())
        manifest = json.loads((policy / "manifest.json").read_text())
        config = manifest.get("config", {})
        chain.append({"policy": str(policy), "trained": manifest.get("trained"), "benchmark": manifest.get("benchmark"),
                      "split_seed": manifest.get("split_seed"), "config": config})
        if not config.get("init") and "shipped" in manifest:  # a shipped policy: its runs are in its manifest
            chain[-1].update(shipped={k: v for k, v in manifest["shipped"].items() if k != "lineage"},
                             calibrated=manifest.get("calibrated"))
            chain += manifest["shipped"]["lineage"][::-1]
            break
        policy = Path(config["init"]) if config.get("init") else None
    return chain[::-1]


def commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True).stdout.strip()
        return out + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("policy", type=Path, help="a trained policy folder")
    parser.add_argument("dest", type=Path, help="where to put it (autotool/default_policy)")
    parser.add_argument("--command", required=True, help="the command that trained it")
    parser.add_argument("--data", required=True, help="what it was trained on, in words")
    args = parser.parse_args(argv)
    if not (args.policy / "manifest.json").is_file():
        print(f"error: {args.policy} is not a policy folder (no manifest.json)", file=sys.stderr)
        return 2
    manifest = json.loads((args.policy / "manifest.json").read_text())
    manifest["shipped"] = {"data": args.data, "command": args.command, "commit": commit(),
                           "date": datetime.date.today().isoformat(), "lineage": lineage(args.policy)}
    manifest.pop("config", None)  # the last run's config is in the lineage
    tmp = args.dest.with_name(f".{args.dest.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(args.policy, tmp, ignore=shutil.ignore_patterns("manifest.json"))
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    shutil.rmtree(args.dest, ignore_errors=True)
    tmp.rename(args.dest)
    size = sum(f.stat().st_size for f in args.dest.rglob("*") if f.is_file())
    print(f"shipped {args.policy} -> {args.dest} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
