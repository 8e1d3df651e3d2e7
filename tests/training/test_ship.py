import json

from helpers import ASSETS

from autotool import Policy
from training.ship import main


def test_ship_copies_the_policy_and_records_how_it_was_made(bank, tmp_path):
    first = Policy.create(bank, backbone=ASSETS / "tiny-llama")
    first.info.update({"trained": "phase 1 on a: sft", "benchmark": "a", "split_seed": 0, "config": {"init": ""}})
    first.save(tmp_path / "first")
    second = Policy.load(tmp_path / "first", bank)
    second.info.update({"trained": "phase 1 on b: sft", "benchmark": "b", "config": {"init": str(tmp_path / "first")}})
    second.save(tmp_path / "second")

    dest = tmp_path / "package" / "default_policy"
    dest.parent.mkdir()
    assert main([str(tmp_path / "second"), str(dest), "--command", "make train-default", "--data", "a, then b"]) == 0
    manifest = json.loads((dest / "manifest.json").read_text())
    shipped = manifest["shipped"]
    assert shipped["command"] == "make train-default" and shipped["data"] == "a, then b" and shipped["commit"]
    assert [run["benchmark"] for run in shipped["lineage"]] == ["a", "b"]
    assert manifest["trained_on"] == [
        {"catalog": "a", "split": "train", "seed": 0},
        {"catalog": "b", "split": "train", "seed": 0},
    ]  # merged from the lineage
    assert "config" not in manifest
    assert Policy.load(dest, bank).info["shipped"]["lineage"][0]["trained"] == "phase 1 on a: sft"
    assert main([str(tmp_path / "nothing"), str(dest), "--command", "x", "--data", "y"]) == 2


def test_a_policy_trained_on_from_the_shipped_one_keeps_the_whole_lineage(bank, tmp_path):
    first = Policy.create(bank, backbone=ASSETS / "tiny-llama")
    first.info.update({"trained": "phase 1 on a: sft", "benchmark": "a", "split_seed": 0, "config": {"init": ""}})
    first.save(tmp_path / "first")
    dest = tmp_path / "default_policy"
    assert main([str(tmp_path / "first"), str(dest), "--command", "make train-default", "--data", "a"]) == 0
    manifest = json.loads((dest / "manifest.json").read_text())
    manifest["calibrated"] = {"b": 0.5}
    (dest / "manifest.json").write_text(json.dumps(manifest))
    more = Policy.load(dest, bank)  # carries the shipped record along, as training from it does
    more.info.update({"trained": "phase 1 on a: grpo", "config": {"init": str(dest)}})
    more.save(tmp_path / "more")

    assert main([str(tmp_path / "more"), str(dest), "--command", "make train-default", "--data", "a, grpo"]) == 0
    lineage = json.loads((dest / "manifest.json").read_text())["shipped"]["lineage"]
    assert [run["trained"] for run in lineage] == ["phase 1 on a: sft", "phase 1 on a: sft", "phase 1 on a: grpo"]
    assert lineage[1]["policy"] == str(dest) and lineage[1]["calibrated"] == {"b": 0.5}
    assert lineage[1]["shipped"]["data"] == "a" and "lineage" not in lineage[1]["shipped"]


def _calibrated(bank, folder, hits, steps=None):
    policy = Policy.create(bank, backbone=ASSETS / "tiny-llama")
    policy.info.update(
        {
            "trained": "phase 1 on a: sft",
            "benchmark": "a",
            "config": {"init": ""},
            "calibrated": {"val_hit@1": hits, "split_seed": 0, "val_steps": steps or {name: 10 for name in hits}},
        }
    )
    policy.save(folder)
    return folder


def test_unless_worse_on_val_keeps_the_shipped_policy_when_the_candidate_scores_lower(bank, tmp_path):
    dest = tmp_path / "default_policy"
    ship = lambda folder: main([str(folder), str(dest), "--command", "c", "--data", "d", "--unless-worse-on-val"])
    assert ship(_calibrated(bank, tmp_path / "first", {"a": 0.5, "b": 0.7})) == 0  # nothing shipped yet
    assert json.loads((dest / "manifest.json").read_text())["calibrated"]["val_hit@1"] == {"a": 0.5, "b": 0.7}

    assert ship(_calibrated(bank, tmp_path / "worse", {"a": 0.6, "b": 0.5})) == 0  # mean 0.55 < 0.6
    assert json.loads((dest / "manifest.json").read_text())["calibrated"]["val_hit@1"] == {"a": 0.5, "b": 0.7}

    assert ship(_calibrated(bank, tmp_path / "tie", {"a": 0.7, "b": 0.5})) == 0  # mean 0.6 = 0.6: shipped
    assert json.loads((dest / "manifest.json").read_text())["calibrated"]["val_hit@1"] == {"a": 0.7, "b": 0.5}

    assert ship(_calibrated(bank, tmp_path / "other", {"a": 0.9, "b": 0.9}, {"a": 5, "b": 10})) == 2  # other val steps
    not_calibrated = Policy.create(bank, backbone=ASSETS / "tiny-llama")
    not_calibrated.save(tmp_path / "raw")
    assert ship(tmp_path / "raw") == 2
    assert json.loads((dest / "manifest.json").read_text())["calibrated"]["val_hit@1"] == {"a": 0.7, "b": 0.5}


def test_provenance_names_the_tracked_files_that_differ_from_the_commit(tmp_path, monkeypatch):
    import subprocess

    from training.ship import provenance

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True)

    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "record.md").write_text("old\n")
    git("add", ".")
    git("commit", "-q", "-m", "start")
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    monkeypatch.chdir(tmp_path)

    (tmp_path / "scratch.log").write_text("untracked files do not count\n")
    assert provenance() == {"commit": sha}
    (tmp_path / "record.md").write_text("new\n")
    assert provenance() == {"commit": f"{sha}-dirty", "uncommitted": ["record.md"]}


def test_provenance_outside_a_repository_says_unknown(tmp_path, monkeypatch):
    from training.ship import provenance

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert provenance() == {"commit": "unknown"}
