"""What a cold `autotool select --mode fast` and `autotool serve --preload` load (issue #24): a policy loaded
frozen reads its language model only when something needs it, and choosing in fast mode without arguments
while W is zero needs nothing of it, with the rankings of the full path. Timings: bench/bench_cli.py."""

import json
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner
from helpers import ASSETS

from autotool import Policy, select_tool
from autotool.cli import main
from autotool.rollout import hidden_at_anchor, prompt_ids, think
from autotool.selection import StepInput, candidates

TINY = ASSETS / "tiny-llama"
QUERIES = ["weather forecast in Paris", "convert my PDF document to text", "send an email to Bob", "天气怎么样"]


@pytest.fixture
def saved_policy(bank, tmp_path):
    """A tiny policy with W = 0 (as the shipped one), a rationale weight and a lexical prior."""
    torch.manual_seed(0)
    policy = Policy.create(bank, backbone=TINY)
    policy.head.b.data.fill_(0.5)
    policy.head.lexical.fill_(0.3)
    policy.save(tmp_path / "policy")
    return tmp_path / "policy"


def test_fast_choice_without_the_language_model_ranks_as_the_full_path(bank, saved_policy):
    lazy = Policy.load(saved_policy, bank)
    full = Policy.load(saved_policy, bank)
    full.warm()
    assert not lazy.head_values.uses_hidden and not lazy.lm_loaded and full.lm_loaded
    assert full.adapters_merged and full._prefix_cache is not None  # warm: ready to generate
    for query in QUERIES:
        got = select_tool(query, bank=bank, policy=lazy, k=4, mode="fast", arguments=False)
        # The full path, as select_steps ran it before the shortcut: the prompt, the policy's (empty) fast-mode
        # thought, its hidden state at <tool_anchor> (unused while W is zero), the anchor, the candidates.
        step = StepInput(query)
        _, _, rationales, heads = think(full, [prompt_ids(full, step)], "fast", 32)
        anchors = full.anchors(bank.embedder, [query], rationales, hidden_at_anchor(full, heads))
        ranked = candidates(full.head_values, bank, anchors, [step], 64)[0]
        assert [(t.name, p) for t, p in got.candidates] == [(c.tool.name, c.probability) for c in ranked[:4]]
        assert got.tool.name == ranked[0].tool.name and got.rationale == rationales[0] == ""
        assert [
            (t.name, p)
            for t, p in select_tool(query, bank=bank, policy=full, k=4, mode="fast", arguments=False).candidates
        ] == [(t.name, p) for t, p in got.candidates]
    assert not lazy.lm_loaded  # nothing needed it
    select_tool(QUERIES[0], bank=bank, policy=lazy, k=2, mode="reason", arguments=False)
    assert lazy.lm_loaded  # a rationale does


def test_a_trainable_load_reads_the_language_model_at_once(bank, saved_policy):
    assert Policy.load(saved_policy, bank, trainable=True).lm_loaded


def test_cli_fast_select_imports_no_language_model_library(bank, saved_policy):
    code = (
        "import sys; from autotool.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print('MODULES', sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers', 'peft', 'sentence_transformers', 'accelerate'}))"
    )
    argv = ["select", QUERIES[0], "--mode", "fast", "--bank", str(bank.path), "--policy", str(saved_policy), "--json"]
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    chosen, modules = out.stdout.rsplit("MODULES", 1)
    assert modules.strip() == "[]"
    expected = select_tool(QUERIES[0], bank=bank, policy=Policy.load(saved_policy, bank), mode="fast", arguments=False)
    assert json.loads(chosen)["candidates"] == [
        {"name": t.qualified_name, "probability": p} for t, p in expected.candidates
    ]


def test_select_names_flags_and_unknown_namespaces(bank, saved_policy):
    def run(*args):
        return CliRunner().invoke(main, ["select", "x", "--bank", str(bank.path), "--policy", str(saved_policy), *args])

    result = run("--namespace", "wether", "--mode", "fast")
    assert result.exit_code == 1
    assert "namespace 'wether' does not exist" in result.output and "weather (2)" in result.output
    result = CliRunner().invoke(main, ["select", "x", "--bank", str(bank.path.parent / "nowhere")])
    assert result.exit_code == 1 and "is not a bank" in result.output and "ToolBank" not in result.output


def test_select_says_when_no_tool_fits(bank, saved_policy):
    def run(*args):
        argv = ["select", QUERIES[0], "--mode", "fast", "--bank", str(bank.path), "--policy", str(saved_policy)]
        return CliRunner().invoke(main, [*argv, *args])

    result = run("--min-cosine", "1.01")
    assert result.exit_code == 0 and result.output.startswith("no tool fits (the closest has cosine")
    out = json.loads(run("--min-cosine", "1.01", "--json").output)
    assert out["tool"] is None and out["arguments"] is None and out["candidates"]
    out = json.loads(run("--json").output)
    assert out["tool"] == out["candidates"][0]["name"] and -1 <= out["cosine"] <= 1


def test_select_k_below_one_names_the_flag(bank, saved_policy):
    result = CliRunner().invoke(
        main, ["select", "x", "-k", "0", "--bank", str(bank.path), "--policy", str(saved_policy)]
    )
    assert result.exit_code == 2 and "'-k'" in result.output


def test_serve_preload_loads_the_policy_before_the_first_call_quietly(bank, saved_policy):
    argv = [
        sys.executable,
        "-m",
        "autotool",
        "serve",
        "--bank",
        str(bank.path),
        "--policy",
        str(saved_policy),
        "--preload",
    ]
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = process.stderr.readline()  # written before the server reads a request: none has been sent
        assert first.startswith(
            f"ready: serving {bank.path} (4 tools) over stdio; read-only; indexes, embedder and "
            "policy (language model included) loaded in"
        ), first
        call = {
            "name": "select_tool",
            "arguments": {"query": "weather forecast in Paris", "k": 2, "mode": "reason", "arguments": False},
        }
        requests = [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
        ]
        for request in requests:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            answer = json.loads(process.stdout.readline()) if "id" in request else None
        result = json.loads(answer["result"]["content"][0]["text"])
        assert len(result["candidates"]) == 2 and result["tool"]["name"] == result["candidates"][0]["name"]
        process.stdin.close()
        err = process.stderr.read()
        process.wait(timeout=60)
    finally:
        process.kill()
    assert "DEBUG" not in err and "it/s" not in err and "%|" not in err, err
    assert err.strip() == "", err  # the ready line was the only line
