"""The main job's closing table reads committed evaluations: each folder it names must hold one."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_demo_prints_the_committed_unseen_results_of_the_shipped_policy(capsys):
    spec = importlib.util.spec_from_file_location("demo", ROOT / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    demo.print_results()
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[0] for line in lines] == list(demo.RESULT_FOLDERS)
    assert all("no results" not in line and "policy " in line and "dense " in line for line in lines)
