"""The main job (`make run`) end to end: the real bank, the shipped policy, its first screen."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.slow  # embeds the 4,276 bundled tools once (about a minute) and runs the shipped policy
def test_main_job_shows_choices_and_only_valid_arguments(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "demo.py"), "--bank", str(tmp_path / "bank")],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert "4276 tools ready" in out
    assert out.count("  chosen:    ") == 3 and "note:" not in out and "Warning" not in out
    chosen = [line for line in out.splitlines() if line.startswith("  chosen:    ")]
    assert "book_meeting_room" in chosen[2]  # a tool that no catalog the policy trained on contains
    for line in out.splitlines():
        if line.startswith("  arguments: {"):  # shown arguments are valid ones: JSON objects
            import json

            assert isinstance(json.loads(line.removeprefix("  arguments: ")), dict)
    # the committed figures of the served path, read back
    assert "seal_tools (300 requests, unseen tools): bm25 0.927" in out and "fast 0.940, reason 0.960" in out
    assert "apibank (354 requests, " in out and "fast 0.836, reason 0.839" in out
