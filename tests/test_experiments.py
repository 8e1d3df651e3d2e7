"""The run records in experiments/: each folder says what it asked, what ran, what came out and how to read it,
and every path that points into experiments/ (Markdown links and paths in the text, the Makefile's recipes,
the recipes' --exclude-run folders) names something that exists."""

import glob
import os
import re
from datetime import date
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
EXPERIMENTS = ROOT / "experiments"
FOLDERS = sorted(p for p in EXPERIMENTS.iterdir() if p.is_dir() and not p.name.startswith((".", "__")))
PARTS = ["Question", "Command", "Result", "Reading"]
SKIP = {".git", ".venv", "runs", "node_modules", ".pytest_cache", ".ruff_cache"}
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PATH = re.compile(r"(?<![\w/.$-])experiments/[\w./*+-]*[\w*/]")  # a path from the repository root
SIBLING = re.compile(r"(?<![\w/.-])\.\./\d{4}-\d{2}-\d{2}-[\w./*+-]*[\w*/]")  # from one experiment to another


def markdown_files() -> list[Path]:
    return sorted(
        p
        for p in ROOT.rglob("*.md")
        if not SKIP & set(p.relative_to(ROOT).parts) and not any(q.endswith(".egg-info") for q in p.parts)
    )


def exists(path: Path) -> bool:
    return bool(glob.glob(str(path))) if "*" in str(path) else path.exists()


def test_there_are_experiments():
    assert len(FOLDERS) > 20 and (EXPERIMENTS / "README.md").is_file()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_each_experiment_is_dated_and_its_readme_has_question_command_result_reading(folder):
    match = re.fullmatch(r"(\d{4}-\d{2}-\d{2})-[a-z0-9][\w.+-]*", folder.name)
    assert match, f"{folder.name}: expected <YYYY-MM-DD>-<name>"
    date.fromisoformat(match[1])
    readme = folder / "README.md"
    assert readme.is_file(), f"{folder.name} has no README.md"
    text = readme.read_text()
    found = [m[1] for m in re.finditer(r"^## (\w+)\s*$", text, re.M) if m[1] in PARTS]
    assert found == PARTS, f"{readme}: sections {found}, expected {PARTS} in that order"
    for part, nxt in zip(PARTS, PARTS[1:] + [None]):
        body = text.split(f"## {part}\n", 1)[1]
        body = body.split(f"## {nxt}\n", 1)[0] if nxt else body
        assert body.strip(), f"{readme}: section {part} is empty"


def test_every_link_and_path_into_experiments_resolves():
    broken = []
    for md in markdown_files():
        text = md.read_text(errors="replace")
        targets = []
        for target in LINK.findall(text):
            target = target.split("#", 1)[0]
            if target and not re.match(r"[a-z]+:", target):
                targets.append(md.parent / target)
        targets += [ROOT / t for t in PATH.findall(text)]
        if EXPERIMENTS in md.parents:
            targets += [md.parent / t for t in SIBLING.findall(text)]
        for t in targets:
            resolved = Path(os.path.normpath(t.absolute()))
            if EXPERIMENTS.absolute() in [resolved, *resolved.parents] and not exists(resolved):
                broken.append(f"{md.relative_to(ROOT)}: {t}")
    assert not broken, "paths into experiments/ that do not exist:\n" + "\n".join(sorted(set(broken)))


def test_the_makefile_recipes_and_their_exclusions_exist():
    recipes = re.findall(r"\bsh (experiments/\S+\.sh)", (ROOT / "Makefile").read_text())
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    assert {"train-default", "train-metatool", "eval-default"} <= targets
    assert len(recipes) >= 3 and all((ROOT / r).is_file() for r in recipes), recipes
    for script in EXPERIMENTS.glob("*/*.sh"):
        text = script.read_text()
        prefixes = dict(re.findall(r"^(\w+)=(experiments[\w/-]*)\s", text, re.M))
        for run in re.findall(r"--exclude-run ([^\s\"']+)", text):
            for name, value in prefixes.items():
                run = run.replace(f"${name}", value)
            assert (ROOT / run / "results.json").is_file(), f"{script.relative_to(ROOT)}: --exclude-run {run}"


def test_the_index_lists_every_experiment():
    index = (EXPERIMENTS / "README.md").read_text()
    assert [f.name for f in FOLDERS if f"]({f.name}/)" not in index] == []
