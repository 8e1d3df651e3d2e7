"""Helpers shared by tests (importable as `helpers`; pytest puts tests/ on the path)."""

from pathlib import Path

import faiss

from toolbank import Tool, ToolBank

ASSETS = Path(__file__).parent / "assets"
DATA = Path(__file__).parents[1] / "eval" / "data"


def weather_tools() -> list[Tool]:
    obj = {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
           "required": ["city"]}
    return [
        Tool("get_weather", "Current weather and temperature for a city", obj, namespace="weather"),
        Tool("get_forecast", "Weather forecast for the next days in a city", obj, namespace="weather",
             tags=("forecast",)),
        Tool("pdf_to_text", "Convert a PDF document to plain text",
             {"type": "object", "properties": {"path": {"type": "string", "description": "PDF file"}}},
             namespace="files"),
        Tool("send_email", "Send an email message to a recipient", {}, namespace="mail"),
    ]


def index_ids(bank: ToolBank) -> set[int]:
    """Row ids held by the bank's FAISS index (IDMap2)."""
    index = faiss.downcast_index(bank.index().index)
    return set(faiss.vector_to_array(index.id_map).tolist())


def store_ids(bank: ToolBank) -> set[int]:
    return set(bank.store.tools())
