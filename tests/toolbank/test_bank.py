import json

import numpy as np
import pytest
from helpers import index_ids, store_ids, weather_tools

from toolbank import BankError, HashEmbedder, Tool, ToolBank


class CountingEmbedder(HashEmbedder):
    """Counts the texts it embeds."""

    def __init__(self, dim=64):
        super().__init__(dim)
        self.texts = 0

    def encode(self, texts, *, progress=False):
        self.texts += len(texts)
        return super().encode(texts)


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_search_finds_the_right_tool(bank, mode):
    hits = bank.search("convert this PDF document to text", k=3, mode=mode)
    assert hits[0].name == "files/pdf_to_text" and hits[0].tool.name == "pdf_to_text"
    assert [h.score for h in hits] == sorted([h.score for h in hits], reverse=True)
    assert len(hits) <= 3


def test_search_filters_by_namespace_and_tag(bank):
    assert {h.name for h in bank.search("weather", k=10, namespace="weather")} == {
        "weather/get_weather",
        "weather/get_forecast",
    }
    assert [h.name for h in bank.search("weather", k=10, tags=["forecast"], mode="dense")] == ["weather/get_forecast"]
    assert bank.search("weather", k=10, namespace="nothing_here") == []
    both = bank.search("convert a document or the weather", k=10, namespace=["weather", "files"], mode="dense")
    alone = bank.search("convert a document or the weather", k=10, mode="dense")
    namespaces = {t.qualified_name: t.namespace for t in bank}
    assert [h.name for h in both] == [h.name for h in alone if namespaces[h.name] in ("weather", "files")]
    tagged = bank.search("weather", k=10, namespace=["weather", "files"], tags=["forecast"], mode="bm25")
    assert [h.name for h in tagged] == ["weather/get_forecast"]
    with pytest.raises(BankError, match="lists of tags"):
        bank.search("weather", tags="forecast")
    with pytest.raises(BankError, match="non-empty list"):
        bank.search("weather", namespace=[])


def test_search_rejects_bad_arguments(bank):
    with pytest.raises(BankError, match="empty"):
        bank.search("   ")
    with pytest.raises(BankError, match="unknown search mode 'fuzzy'"):
        bank.search("weather", mode="fuzzy")
    with pytest.raises(BankError, match="k must be"):
        bank.search("weather", k=0)


def test_dense_scores_are_cosines(bank, embedder):
    hit = bank.search("Send an email message", k=1, mode="dense")[0]
    expected = float(embedder.encode(["Send an email message"])[0] @ embedder.encode([hit.tool.text])[0])
    assert hit.score == pytest.approx(expected, abs=1e-5)


def test_hybrid_scores_are_on_one_scale_and_hits_carry_their_cosine(bank, embedder):
    for query in ("Send an email message", "weather", "zzzz qqqq"):
        hybrid = bank.search(query, k=3, mode="hybrid")
        assert all(0 < h.score <= 1 for h in hybrid)
        vector = embedder.encode([query])[0]
        for hit in hybrid + bank.search(query, k=3, mode="dense"):
            assert hit.cosine == pytest.approx(float(vector @ embedder.encode([hit.tool.text])[0]), abs=1e-5)
    first = bank.search("Send an email message", k=1, mode="dense")[0]
    assert first.cosine == pytest.approx(first.score, abs=1e-5)
    both_first = bank.search("Send an email message", k=1, mode="hybrid")[0]
    assert both_first.name == first.name == bank.search("Send an email message", k=1, mode="bm25")[0].name
    assert both_first.score == pytest.approx(1.0)  # first in both rankings
    assert all(h.cosine is None for h in bank.search("weather", k=3, mode="bm25"))


def test_unchanged_text_is_not_re_embedded(tmp_path):
    embedder = CountingEmbedder()
    bank = ToolBank.create(tmp_path / "b", embedder)
    report = bank.add(weather_tools())
    assert embedder.texts == 4 and report.embedded == 4 and len(report.added) == 4
    report = bank.add(weather_tools(), replace=True)
    assert embedder.texts == 4 and report.unchanged == [t.qualified_name for t in weather_tools()]
    renamed = Tool("get_weather_copy", weather_tools()[0].description, weather_tools()[0].parameters)
    bank.add([renamed])
    assert embedder.texts == 5  # the name is part of the text
    changed = Tool("send_email", "Send an email with attachments", {}, namespace="mail")
    report = bank.add([changed], replace=True)
    assert report.replaced == ["mail/send_email"] and embedder.texts == 6
    assert bank.get("send_email").description == "Send an email with attachments"


def test_duplicate_without_replace_leaves_bank_unchanged(bank):
    generation, before = bank.store.generation, list(bank)
    new = [Tool("brand_new", "something else"), Tool("get_weather", "another weather tool", namespace="weather")]
    with pytest.raises(BankError, match="'weather/get_weather' is already in the bank; use replace=True"):
        bank.add(new)
    assert list(bank) == before and bank.store.generation == generation and "brand_new" not in bank


def test_replace_only_in_a_namespace(bank):
    bank.add([Tool("station_temp", "Temperature at a station", namespace="station")])
    report = bank.add(
        [
            Tool("station_temp", "Temperature at a weather station", namespace="station"),
            Tool("station_wind", "Wind at a station", namespace="station"),
        ],
        replace_only_in="station",
    )
    assert report.replaced == ["station/station_temp"] and report.added == ["station/station_wind"]
    generation, before = bank.store.generation, list(bank)
    with pytest.raises(
        BankError, match="'weather/get_weather' is already in the bank outside namespace 'station'"
    ):  # a tool of another namespace is not overwritten
        bank.add(
            [Tool("station_rain", "Rain", namespace="station"), Tool("get_weather", "mine", namespace="weather")],
            replace_only_in="station",
        )
    assert list(bank) == before and bank.store.generation == generation and "station_rain" not in bank
    # The same name in the namespace is another tool: it is added beside the other namespace's.
    report = bank.add([Tool("get_weather", "mine", namespace="station")], replace_only_in="station")
    assert report.added == ["station/get_weather"] and bank.get("weather/get_weather") == before[0]


def test_duplicate_within_batch(bank):
    with pytest.raises(BankError, match="repeat in this batch: dup"):
        bank.add([Tool("dup"), Tool("dup", "other")])


def test_remove(bank):
    bank.remove(["send_email"])
    assert "send_email" not in bank and len(bank) == 3
    assert all(h.name != "send_email" for h in bank.search("email", k=5, mode="dense"))
    with pytest.raises(BankError, match="no tool named 'nope'"):
        bank.remove(["get_weather", "nope"])
    assert "get_weather" in bank  # all or nothing


def test_round_trip_returns_same_results(bank, embedder):
    queries = ["weather tomorrow", "email my boss", "read a pdf"]
    before = [
        [(h.name, round(h.score, 5)) for h in bank.search(q, k=4, mode=m)]
        for q in queries
        for m in ("dense", "bm25", "hybrid")
    ]
    bank.close()
    again = ToolBank.load(bank.path, embedder)
    after = [
        [(h.name, round(h.score, 5)) for h in again.search(q, k=4, mode=m)]
        for q in queries
        for m in ("dense", "bm25", "hybrid")
    ]
    assert after == before


@pytest.mark.parametrize("damage", ["delete", "truncate", "garbage", "stale"])
def test_damaged_index_is_rebuilt(bank, embedder, damage):
    expected = [h.name for h in bank.search("weather forecast", k=4, mode="dense")]
    path = bank.path / "index.faiss"
    if damage == "delete":
        path.unlink()
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "garbage":
        path.write_bytes(b"\x00" * 5000)
    else:  # index.json claims an older generation
        meta = json.loads((bank.path / "index.json").read_text())
        (bank.path / "index.json").write_text(json.dumps({**meta, "generation": meta["generation"] - 1}))
    bank.close()
    again = ToolBank.load(bank.path, embedder)
    assert [h.name for h in again.search("weather forecast", k=4, mode="dense")] == expected
    assert index_ids(again) == store_ids(again)
    assert (bank.path / "index.faiss").stat().st_size > 1000  # and written back


def test_other_process_writes_are_seen(bank, embedder):
    other = ToolBank.load(bank.path, embedder)
    other.add([Tool("translate_text", "Translate text between languages")])
    assert bank.search("translate this text to French", k=1, mode="dense")[0].name == "translate_text"
    assert bank.search("translate this text to French", k=1, mode="bm25")[0].name == "translate_text"


def test_not_a_bank(tmp_path):
    (tmp_path / "stuff").mkdir()
    (tmp_path / "stuff" / "notes.txt").write_text("hello")
    with pytest.raises(BankError, match="is not a bank"):
        ToolBank.load(tmp_path / "stuff")
    with pytest.raises(BankError, match="not an empty folder"):
        ToolBank.create(tmp_path / "stuff", HashEmbedder(8))


def test_damaged_database(bank):
    bank.close()
    (bank.path / "bank.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(BankError, match="bank.sqlite is damaged or not a bank database"):
        ToolBank.load(bank.path)


def test_unknown_format_version(bank):
    manifest = json.loads((bank.path / "manifest.json").read_text())
    (bank.path / "manifest.json").write_text(json.dumps({**manifest, "format_version": 99}))
    with pytest.raises(BankError, match="'format_version' is 99"):
        ToolBank.load(bank.path)


def test_other_embedder_is_an_error_and_reindex_switches(bank):
    with pytest.raises(BankError, match=r"embedded with hash:64 \(dim 64\), not hash:32.*reindex --embedder hash:32"):
        ToolBank.load(bank.path, HashEmbedder(32))
    bank.reindex(embedder=HashEmbedder(32))
    again = ToolBank.load(bank.path, HashEmbedder(32))
    assert again.dim == 32 and json.loads((bank.path / "manifest.json").read_text())["dim"] == 32
    assert again.search("convert a pdf document", k=1, mode="dense")[0].name == "files/pdf_to_text"
    assert again.vectors(["get_weather"]).shape == (1, 32)


def test_hnsw_index_agrees_with_flat(tmp_path, embedder):
    rng = np.random.default_rng(0)
    words = "weather email pdf text convert send city forecast file report chart stock price news".split()
    tools = [Tool(f"tool_{i}", " ".join(rng.choice(words, 6))) for i in range(300)]
    flat = ToolBank.create(tmp_path / "flat", embedder)
    flat.add(tools)
    hnsw = ToolBank.create(tmp_path / "hnsw", embedder, index="hnsw")
    hnsw.add(tools)
    assert (
        "HNSW" in hnsw.index_factory
        and "HNSW" in json.loads((hnsw.path / "manifest.json").read_text())["index_factory"]
    )
    for query in ["weather in a city", "send an email report", "stock price chart"]:
        a = [h.score for h in flat.search(query, k=10, mode="dense")]
        b = [h.score for h in hnsw.search(query, k=10, mode="dense")]
        assert b == pytest.approx(a, abs=1e-5)  # same scores (names may differ among exact ties)
    hnsw.remove(["tool_0"])  # HNSW cannot remove_ids: the index is rebuilt
    assert index_ids(hnsw) == store_ids(hnsw)
    flat.reindex(index="hnsw")
    assert "HNSW" in ToolBank.load(flat.path).index_factory


def test_hnsw_search_breadth_applies_to_saved_indexes(tmp_path, embedder):
    import faiss

    from toolbank.index import HNSW_EF_SEARCH

    bank = ToolBank.create(tmp_path / "hnsw", embedder, index="hnsw")
    bank.add([Tool(f"tool_{i}", f"tool number {i}") for i in range(50)])
    saved = faiss.read_index(str(bank.path / "index.faiss"))
    faiss.downcast_index(faiss.downcast_index(saved).index).hnsw.efSearch = 16  # as an older version saved it
    faiss.write_index(saved, str(bank.path / "index.faiss"))
    reopened = ToolBank.load(bank.path)
    index = reopened.index()  # keep the owners alive: FAISS proxies of inner indexes do not own them
    outer = faiss.downcast_index(index.index)
    assert faiss.downcast_index(outer.index).hnsw.efSearch == HNSW_EF_SEARCH


def test_bad_index_factory(tmp_path, embedder):
    from toolbank.index import IndexFactoryError

    with pytest.raises(IndexFactoryError, match="FAISS cannot build"):
        ToolBank.create(tmp_path / "b", embedder, index="NoSuchIndex")
    assert not (tmp_path / "b").exists()


def test_vectors_are_the_stored_embeddings(bank, embedder):
    tool = bank.get("pdf_to_text")
    np.testing.assert_allclose(bank.vectors(["pdf_to_text"])[0], embedder.encode([tool.text])[0], atol=1e-6)
    with pytest.raises(KeyError, match="nope"):
        bank.vectors(["nope"])


def test_empty_bank_searches_to_nothing(tmp_path, embedder):
    bank = ToolBank.create(tmp_path / "empty", embedder)
    assert bank.search("anything", mode="hybrid") == [] and bank.search("anything", mode="bm25") == []


def test_stats(bank):
    stats = bank.stats()
    assert stats["tools"] == 4 and stats["namespaces"] == {"files": 1, "mail": 1, "weather": 2}
    assert stats["embedder"] == "hash:64" and stats["index_factory"] == "IDMap2,Flat"
