"""The reranker trainer's `--catalogs`: which training catalogs (and splits) its rows come from."""

import pytest
from click.testing import CliRunner

from training.cli import CommandError
from training.reranker import DEFAULT_CATALOGS, main, parse_catalogs


def test_default_reads_metatool_and_bfcl_whole_and_seal_tools_train_split():
    assert parse_catalogs(DEFAULT_CATALOGS) == [("metatool", True), ("bfcl", True), ("seal_tools", False)]


def test_leave_one_out_spec():
    assert parse_catalogs("seal_tools:all, bfcl:all") == [("seal_tools", True), ("bfcl", True)]


@pytest.mark.parametrize(
    "spec, says",
    [
        ("apibank:all", "'apibank' is not a training catalog"),  # a foreign validation catalog is never trained on
        ("metatool", "expected the split 'all' or 'train'"),
        ("metatool:val", "expected the split 'all' or 'train'"),
        (" , ", "expected at least one catalog"),
    ],
)
def test_bad_spec_names_the_option_and_what_was_expected(spec, says):
    with pytest.raises(CommandError, match="--catalogs") as error:
        parse_catalogs(spec)
    assert says in str(error.value)


def test_cli_refuses_a_foreign_catalog_before_training(tmp_path):
    result = CliRunner().invoke(main, ["--out", str(tmp_path / "r"), "--catalogs", "toolalpaca:all"])
    assert result.exit_code != 0
    assert "'toolalpaca' is not a training catalog" in result.output
    assert not (tmp_path / "r").exists()


def test_fit_hits_reorder_by_the_weight():
    from training.fit_rerank import hits

    # the selector prefers a (wrong) over b (gold) by log 2; the reranker prefers b by 1 point of score
    rows = [{"id": "q", "gold": ["b"], "candidates": ["a", "b"], "p": [0.6, 0.3], "score": [0.0, 1.0]}]
    assert hits(rows, 0.0) == [0.0]  # c = 0: no reranking
    assert hits(rows, 0.5) == [0.0]  # 0.5 < log 2: still a
    assert hits(rows, 1.0) == [1.0]  # 1 > log 2: b
