"""Fitting the rationale weight b, the lexical weights l and l_later and the sharpness g on the val split."""

import json

import pytest
import torch
from helpers import ASSETS, write_bench

from autotool import Policy
from autotool.benchmarks import benchmark_bank, load_benchmark
from autotool.rollout import ToolTable
from training import calibrate
from training.calibrate import ValSteps, grid_hits

TOOLS = torch.eye(4)  # four orthogonal tool vectors


def val_steps(
    rationale: torch.Tensor, lexical: torch.Tensor | None = None, later: tuple[bool, ...] = (False,) * 4
) -> ValSteps:
    """Queries halfway between their gold tool (0 or 2) and a decoy, leaning slightly to the decoy."""
    gold = torch.tensor([0, 2, 0, 2])
    decoy = torch.tensor([1, 3, 1, 3])
    query = torch.nn.functional.normalize(0.9 * TOOLS[gold] + 1.0 * TOOLS[decoy], dim=-1)
    table = ToolTable.__new__(ToolTable)
    table.vectors = TOOLS
    return ValSteps(
        "synthetic",
        table,
        [],
        [],
        query,
        rationale,
        torch.zeros(4, 4),
        torch.zeros(4, 4) if lexical is None else lexical,
        gold,
        torch.tensor(later),
        torch.zeros(4, 4, dtype=torch.bool),
    )


def fit(vals: list[ValSteps], a: float, lexical_grid: list[float] = calibrate.L_GRID):
    return calibrate.fit(vals, a, grid_hits(vals, a, lexical_grid))


def test_fit_weights_an_informative_rationale_and_ignores_a_useless_one():
    gold = torch.tensor([0, 2, 0, 2])
    b, lexical, later, g, table = fit([val_steps(TOOLS[gold])], a=1.0)  # the rationale names the gold direction
    assert table[0.0, 0.0, 0.0] == [0.0] and table[b, lexical, later] == [1.0] and 0 < b <= 0.2  # smallest b
    assert lexical == later == 0.0 and g > 1.0  # no lexical signal (all zeros): l stays 0
    assert all(k[1] == k[2] for k in table)  # no step follows earlier calls: l_later is l
    b, lexical, later, _, table = fit([val_steps(torch.zeros(4, 4))], a=1.0)  # no rationale, no lexical signal
    assert (b, lexical, later) == (0.0, 0.0, 0.0) and {v[0] for v in table.values()} == {0.0}


def test_fit_weights_a_lexical_prior_that_finds_the_gold_tool():
    gold = torch.tensor([0, 2, 0, 2])
    b, lexical, later, _, table = fit([val_steps(torch.zeros(4, 4), lexical=TOOLS[gold])], a=1.0)
    # cos(query, decoy) - cos(query, gold) = 0.1 / |0.9 e_g + e_d| = 0.074: the smallest l above it wins
    assert (b, lexical, later) == (0.0, 0.075, 0.075) and table[0.0, 0.05, 0.05] == [0.0]
    assert table[0.0, 0.075, 0.075] == [1.0]
    _, lexical, later, _, _ = fit([val_steps(torch.zeros(4, 4), lexical=TOOLS[gold])], a=1.0, lexical_grid=[0.0])
    assert lexical == later == 0.0  # --no-lexical


def test_steps_after_earlier_calls_get_their_own_lexical_weight():
    """First steps lean to the gold tool and the prior points at the decoy; steps after earlier calls lean to
    the decoy and the prior points at the gold tool. One weight cannot serve both; l and l_later can."""
    gold, decoy = torch.tensor([0, 2, 0, 2]), torch.tensor([1, 3, 1, 3])
    first = torch.tensor([True, True, False, False])
    lexical = torch.where(first[:, None], TOOLS[decoy], TOOLS[gold])
    val = val_steps(torch.zeros(4, 4), lexical, later=tuple((~first).tolist()))
    val.query[first] = torch.nn.functional.normalize(TOOLS[gold] + 0.9 * TOOLS[decoy], dim=-1)[first]
    b, lexical_first, lexical_later, _, table = fit([val], a=1.0)
    assert (b, lexical_first, lexical_later) == (0.0, 0.0, 0.075) and table[0.0, 0.0, 0.075] == [1.0]
    assert max(v[0] for k, v in table.items() if k[1] == k[2]) == 0.5  # one weight at every step: half right
    assert calibrate.hits(val, 1.0, 0.0, 0.0, 0.075).tolist() == [1.0] * 4


def test_tools_called_at_earlier_steps_are_not_chosen_again():
    gold = torch.tensor([0, 2, 0, 2])
    val = val_steps(torch.zeros(4, 4))
    assert calibrate.hit_at_1(val, 1.0, 0.0) == 0.0  # each query leans to its decoy
    val.excluded[:, [1, 3]] = True  # the decoys were called before
    assert calibrate.hit_at_1(val, 1.0, 0.0) == 1.0 and calibrate.scores(val, 1.0, 0.0)[0, 1] == float("-inf")
    assert (calibrate.scores(val, 1.0, 0.0).argmax(1) == gold).all()


def test_cli_writes_b_and_g_into_the_policy(tmp_path):
    bench = write_bench(tmp_path / "tiny")
    bank = benchmark_bank(load_benchmark(bench), "hash:64", root=tmp_path / "banks")
    policy = Policy.create(bank, backbone=ASSETS / "tiny-llama")
    policy.head.explain.fill_(0.4)  # calibration scores with it and leaves it as it is
    policy.save(tmp_path / "policy")
    val = calibrate.write_rationales(policy, str(bench), limit=0)
    assert val.explain == pytest.approx(0.4)  # the tiny val has no later step: scores() is tested apart
    out = tmp_path / "calibration"
    assert (
        calibrate.main([str(tmp_path / "policy"), "--bench", str(bench), "--limit", "0", "--out", str(out), "--write"])
        == 0
    )
    manifest = json.loads((tmp_path / "policy" / "manifest.json").read_text())
    record = manifest["calibrated"]
    loaded = Policy.load(tmp_path / "policy", bank)
    assert loaded.head.b.item() == record["b"] and abs(loaded.head.log_g.exp().item() - record["g"]) < 1e-3
    assert record["b"] in calibrate.B_GRID and record["val_queries"][bench.name] > 0
    written = (out / f"rationales-{bench.name}.jsonl").read_text().splitlines()
    assert len(written) == record["val_steps"][bench.name] >= record["val_queries"][bench.name]
    assert {"query", "index", "gold", "rationale"} <= set(json.loads(written[0]))
    assert "| 0.5" in (out / "results.md").read_text()  # one row per b of the grid
    assert record["lexical"] in calibrate.L_GRID and loaded.head.lexical.item() == record["lexical"]
    assert loaded.head.lexical_later.item() == record["lexical_later"]
    assert loaded.head.explain.item() == pytest.approx(0.4)
    assert calibrate.main([str(tmp_path / "nothing")]) == 2


def test_cli_rejects_bad_arguments_before_any_work(tmp_path, capsys):
    bench = write_bench(tmp_path / "tiny")
    bank = benchmark_bank(load_benchmark(bench), "hash:64", root=tmp_path / "banks")
    Policy.create(bank, backbone=ASSETS / "tiny-llama").save(tmp_path / "policy")
    before = (tmp_path / "policy" / "anchor_head.safetensors").read_bytes()
    for argv, says in [
        ([str(tmp_path / "nothing")], "not a policy folder"),
        ([str(tmp_path / "policy"), "--bench", "no_such_bench"], "no_such_bench"),
        ([str(tmp_path / "policy"), "--bench", str(bench), "--limit", "-1"], "--limit"),
        ([str(tmp_path / "policy"), "--bench", ","], "--bench"),
    ]:
        assert calibrate.main([*argv, "--write"]) == 2
        assert says in capsys.readouterr().err
    assert (tmp_path / "policy" / "anchor_head.safetensors").read_bytes() == before
    assert "calibrated" not in json.loads((tmp_path / "policy" / "manifest.json").read_text())


def test_a_step_whose_gold_an_earlier_step_called_leaves_the_sharpness_fit_finite():
    """A repeated call (the gold tool already called) has p(gold) = 0 under any g; the NLL leaves it out, so g
    is still fitted on the other steps instead of the grid's first value."""
    gold = torch.tensor([0, 2, 0, 2])
    val = val_steps(TOOLS[gold])
    val.excluded[3, 2] = True  # step 3's gold was called at an earlier step
    assert torch.isfinite(torch.tensor(calibrate.nll(val, 1.0, 1.0, 2.0)))
    _, _, _, g, _ = fit([val], a=1.0)
    assert g > min(calibrate.G_GRID)


def test_scores_read_the_heads_explained_anchor_as_serving_does():
    torch.manual_seed(0)
    vectors = torch.nn.functional.normalize(torch.randn(5, 8), dim=-1)
    query = torch.nn.functional.normalize(torch.randn(2, 8), dim=-1)
    called = torch.zeros(2, 5, dtype=torch.bool)
    called[1, 0] = True  # the second step follows a call of tool 0
    table = ToolTable.__new__(ToolTable)
    table.vectors = vectors
    zeros = torch.zeros(2, 8)
    val = ValSteps(
        "synthetic", table, [], [], query, zeros, zeros, torch.zeros(2, 5), torch.tensor([1, 2]),
        torch.tensor([False, True]), called, called, 0.7,
    )  # fmt: skip
    scores = calibrate.scores(val, a=1.0, b=0.0)
    q, e = query[1].numpy(), vectors[0].numpy()
    anchor = q - 0.7 * (q @ e) * e  # written out: the step's anchor rid of 0.7 of tool 0's direction
    anchor /= (anchor**2).sum() ** 0.5
    torch.testing.assert_close(scores[1, 1:], torch.from_numpy(anchor) @ vectors[1:].T)
    assert scores[1, 0] == -float("inf")
    torch.testing.assert_close(scores[0], query[0] @ vectors.T)  # a first step is as it was
