"""toolbank: a catalog of tools for LLM agents, with dense, BM25 and hybrid search.

from toolbank import ToolBank, Tool
bank = ToolBank.open("./bank")
bank.add([Tool("get_weather", "Current weather for a city", {"type": "object", "properties": {...}})])
bank.search("is it raining in Paris?", k=5)
"""

from toolbank.bank import AddReport, BankError, ToolBank
from toolbank.embed import (
    DEFAULT_EMBEDDER,
    STOCK_EMBEDDER,
    TUNED_EMBEDDER,
    Embedder,
    EmbedderError,
    HashEmbedder,
    load_embedder,
)
from toolbank.paths import atomic_path, atomic_write, autotool_home, default_bank_path
from toolbank.search import SearchHit
from toolbank.tool import Tool, ToolError, load_file

__all__ = [
    "AddReport",
    "atomic_path",
    "atomic_write",
    "BankError",
    "DEFAULT_EMBEDDER",
    "STOCK_EMBEDDER",
    "TUNED_EMBEDDER",
    "Embedder",
    "EmbedderError",
    "HashEmbedder",
    "SearchHit",
    "Tool",
    "ToolBank",
    "ToolError",
    "autotool_home",
    "default_bank_path",
    "load_embedder",
    "load_file",
]
