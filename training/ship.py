"""Copy a trained policy folder into the package as the default policy, recording how it was made.

    python -m training.ship runs/default-seal_tools/policy-sft autotool/default_policy \\
        --command "make train-default" --data "metatool train, then seal_tools train"

The manifest gains `shipped`: the data, the command, the commit (and the tracked files that differed from it),
the date, and the chain of runs that led to the policy (each run's stage, benchmark, split seed and config,
following `config.init` back to the start), and `trained_on` lists every catalog and split of that chain
([{catalog, split, seed}, ...]).

With `--unless-worse-on-val` the policy replaces the one at DEST only if its calibrated val hit@1 (the mean
over the benchmarks `python -m training.calibrate --write` fitted it on) is at least DEST's, on the same val
steps; otherwise DEST stays as it is and the command says so (exit 0).
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path

import click

from autotool.benchmarks import policy_trained_on
from toolbank import atomic_path
from training.cli import CommandError, doc_help, run


def lineage(policy: Path) -> list[dict]:
    """The runs that made `policy`, first to last, from each manifest's `config.init` (and, where that leads
    to a shipped policy, the lineage recorded in its manifest)."""
    chain, seen = [], set()
    while policy and policy.resolve() not in seen:
        seen.add(policy.resolve())
        manifest = json.loads((policy / "manifest.json").read_text())
        config = manifest.get("config", {})
        chain.append(
            {
                "policy": str(policy),
                "trained": manifest.get("trained"),
                "benchmark": manifest.get("benchmark"),
                "split_seed": manifest.get("split_seed"),
                "config": config,
            }
        )
        if not config.get("init") and "shipped" in manifest:  # a shipped policy: its runs are in its manifest
            chain[-1].update(
                shipped={k: v for k, v in manifest["shipped"].items() if k != "lineage"},
                calibrated=manifest.get("calibrated"),
            )
            chain += manifest["shipped"]["lineage"][::-1]
            break
        policy = Path(config["init"]) if config.get("init") else None
    return chain[::-1]


def val_objective(manifest: dict, where: Path) -> tuple[float, dict]:
    """The mean calibrated val hit@1 in a policy manifest, and the val steps it was measured on."""
    fit = manifest.get("calibrated") or {}
    if not isinstance(fit.get("val_hit@1"), dict) or not fit["val_hit@1"]:
        raise ValueError(
            f"{where / 'manifest.json'}: no 'calibrated.val_hit@1' (run python -m training.calibrate "
            f"{where} --write first)"
        )
    scores = fit["val_hit@1"]
    return sum(scores.values()) / len(scores), {
        "benchmarks": sorted(scores),
        "split_seed": fit.get("split_seed"),
        "val_steps": fit.get("val_steps"),
    }


def worse_on_val(candidate: Path, manifest: dict, dest: Path) -> str | None:
    """Why `candidate` should not replace the policy at `dest` (None: it should): its val objective is lower."""
    if not (dest / "manifest.json").is_file():
        return None
    new, new_steps = val_objective(manifest, candidate)
    old, old_steps = val_objective(json.loads((dest / "manifest.json").read_text()), dest)
    if new_steps != old_steps:
        raise ValueError(
            f"{candidate} and {dest} were calibrated on different val steps ({new_steps} vs "
            f"{old_steps}); calibrate both with the same --bench, --limit and --seed"
        )
    return None if new >= old else f"val hit@1 {new:.4f} (mean over {new_steps['benchmarks']}) < {old:.4f}"


def provenance() -> dict:
    """The commit the working tree is at: {"commit": sha}, or, where tracked files differ from it (a recipe
    rewrites its own records and shipped models as it goes), {"commit": "sha-dirty", "uncommitted": [paths]},
    so a reader can tell a changed record from changed code. Untracked files are not counted."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "unknown"}
    changed = sorted(line[3:].split(" -> ")[-1] for line in status.splitlines() if line.strip())
    return {"commit": f"{sha}-dirty", "uncommitted": changed} if changed else {"commit": sha}


@click.command(
    help=doc_help(__doc__) + "\n\nPOLICY: a trained policy folder. DEST: where to put it (autotool/default_policy)."
)
@click.argument("policy", type=click.Path(path_type=Path))
@click.argument("dest", type=click.Path(path_type=Path))
@click.option("--command", required=True, help="The command that trained it.")
@click.option("--data", required=True, help="What it was trained on, in words.")
@click.option(
    "--unless-worse-on-val",
    is_flag=True,
    help="Keep DEST if its calibrated val hit@1 is higher than POLICY's (both calibrated with "
    "python -m training.calibrate --write on the same val steps).",
)
def cli(policy: Path, dest: Path, command: str, data: str, unless_worse_on_val: bool) -> int:
    if not (policy / "manifest.json").is_file():
        raise CommandError(f"{policy} is not a policy folder (no manifest.json)")
    manifest = json.loads((policy / "manifest.json").read_text())
    if unless_worse_on_val:
        try:
            reason = worse_on_val(policy, manifest, dest)
        except ValueError as e:
            raise CommandError(str(e)) from None
        if reason:
            click.echo(f"kept {dest}: {policy} is worse on val ({reason})")
            return 0
    manifest["shipped"] = {
        "data": data,
        "command": command,
        **provenance(),
        "date": datetime.date.today().isoformat(),
        "lineage": lineage(policy),
    }
    manifest["trained_on"] = policy_trained_on(policy)  # every catalog and split of the lineage, explicitly
    manifest.pop("config", None)  # the last run's config is in the lineage
    with atomic_path(dest) as tmp:
        shutil.copytree(policy, tmp, ignore=shutil.ignore_patterns("manifest.json"))
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
    click.echo(f"shipped {policy} -> {dest} ({size / 1e6:.1f} MB)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m training.ship ARGS`, returning the exit code (default `sys.argv[1:]`)."""
    return run(cli, argv)


if __name__ == "__main__":
    sys.exit(main())
