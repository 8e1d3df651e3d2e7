import json

import pytest

from toolbank.tool import FORMATS, Tool, ToolError, dump, from_dict, load_file

SCHEMA = {"type": "object", "properties": {"q": {"type": "string", "description": "search terms"}}, "required": ["q"]}


def test_formats_are_detected_and_read(write_json):
    objects = [
        {"name": "plain_tool", "description": "d", "parameters": SCHEMA},
        {"type": "function", "function": {"name": "openai_tool", "description": "d", "parameters": SCHEMA}},
        {"name": "anthropic_tool", "description": "d", "input_schema": SCHEMA},
        {"name": "mcp_tool", "description": "d", "inputSchema": SCHEMA},
    ]
    tools, errors = load_file(write_json("tools.json", objects))
    assert errors == []
    assert [t.name for t in tools] == ["plain_tool", "openai_tool", "anthropic_tool", "mcp_tool"]
    assert all(t.parameters == SCHEMA for t in tools)


@pytest.mark.parametrize(
    "wrap",
    [
        lambda tools: {"tools": tools, "nextCursor": None},  # MCP tools/list result
        lambda tools: {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}},  # the JSON-RPC response around it
    ],
)
def test_mcp_tools_list_results(write_json, wrap):
    tools = [{"name": "a", "inputSchema": SCHEMA}, {"name": "b", "description": "x", "inputSchema": {"type": "object"}}]
    loaded, _ = load_file(write_json("list.json", wrap(tools)), "mcp")
    assert [t.name for t in loaded] == ["a", "b"]


def test_single_object_and_jsonl(write_json):
    one, _ = load_file(write_json("one.json", {"name": "solo", "description": "d"}))
    assert [t.name for t in one] == ["solo"]
    many, _ = load_file(write_json("many.jsonl", [{"name": f"t{i}"} for i in range(3)]))
    assert [t.name for t in many] == ["t0", "t1", "t2"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_round_trip(write_json, fmt):
    tools = [Tool("a", "first", SCHEMA), Tool("b", "second", {})]
    path = write_json(f"out-{fmt}.json", None, raw=dump(tools, fmt).encode())
    assert load_file(path, fmt)[0] == tools
    path = write_json(f"out-{fmt}.jsonl", None, raw=dump(tools, fmt, jsonl=True).encode())
    assert load_file(path, fmt)[0] == tools


def test_plain_export_keeps_namespace_and_tags():
    tool = Tool("a", "d", {}, namespace="ns", tags=("x", "y"))
    assert from_dict(tool.to_dict("plain")) == tool


def test_text_has_name_description_and_parameters():
    text = Tool("find", "Find things", SCHEMA).text
    assert text == "find: Find things\nq (string): search terms"


@pytest.mark.parametrize(
    "obj, field, words",
    [
        ({"description": "no name"}, "name", "missing or empty"),
        ({"name": "", "description": "d"}, "name", "missing or empty"),
        ({"name": "has space", "description": "d"}, "name", "invalid"),
        ({"name": "x" * 65}, "name", "invalid"),
        ({"name": "t", "parameters": {"type": "objekt"}}, "parameters", "not a valid JSON Schema"),
        ({"name": "t", "parameters": {"properties": {"a": {"type": 5}}}}, "parameters", "properties/a/type"),
        ({"name": "t", "parameters": ["not", "a", "schema"]}, "parameters", "expected a JSON Schema object"),
        ({"name": "t", "description": "x" * 1_000_000}, "description", "1,000,000 characters"),
        ({"name": "t", "description": 5}, "description", "expected a string"),
        ({"name": "t", "tags": "one"}, "tags", "list"),
        ({"name": "t", "namespace": "a b"}, "namespace", "invalid"),
    ],
)
def test_invalid_tool_names_file_tool_and_field(write_json, obj, field, words):
    path = write_json("bad.json", [{"name": "fine"}, obj])
    with pytest.raises(ToolError) as info:
        load_file(path)
    error = info.value
    assert error.file == str(path) and error.field == field and words in str(error)
    assert error.tool in (obj.get("name") if isinstance(obj.get("name"), str) and obj.get("name") else "#2",)
    assert str(path) in str(error)


@pytest.mark.parametrize(
    "raw, words",
    [
        (b"", "is empty"),
        (b"  \n\n", "is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00", "binary"),
        ('{"name": "caf\u00e9"}'.encode("latin-1"), "not UTF-8"),
        (b'{"name": "a", ', "invalid JSON"),
        (b'[\n{"name": "a"},\n{"name": \n]', "invalid JSON:"),
        (b'{"name": "a"}\n{"name": "b"\n', r"f\.json:2: invalid JSON: Expecting ',' delimiter at column 13"),
        (b'"just a string"', "expected a JSON object or list"),
    ],
)
def test_bad_files(write_json, raw, words):
    path = write_json("f.json", None, raw=raw)
    with pytest.raises(ToolError, match=words) as info:
        load_file(path)
    assert info.value.file == str(path)


def test_non_utf8_is_an_error_but_non_english_text_is_fine(write_json):
    tools, _ = load_file(write_json("zh.json", {"name": "weather_zh", "description": "查询城市天气"}))
    assert tools[0].description == "查询城市天气"


def test_duplicate_names_in_one_file(write_json):
    with pytest.raises(ToolError, match="appears twice") as info:
        load_file(write_json("dup.json", [{"name": "a"}, {"name": "a"}]))
    assert info.value.tool == "a"


def test_forced_format_that_does_not_match(write_json):
    path = write_json("t.json", [{"name": "a", "parameters": SCHEMA}])
    with pytest.raises(ToolError, match="inputSchema"):
        load_file(path, "mcp")
    with pytest.raises(ToolError, match='"type": "function"'):
        load_file(path, "openai")
    with pytest.raises(ToolError, match="unknown format 'yaml'"):
        load_file(path, "yaml")


def test_skip_invalid_collects_errors(write_json):
    path = write_json("mixed.jsonl", [{"name": "good"}, {"name": "bad name"}, {"name": "also_good"}])
    tools, errors = load_file(path, skip_invalid=True)
    assert [t.name for t in tools] == ["good", "also_good"]
    assert len(errors) == 1 and errors[0].field == "name" and errors[0].tool == "bad name"


def test_tool_is_validated_on_construction():
    with pytest.raises(ToolError, match="name"):
        Tool("bad/name")
    assert json.loads(json.dumps(Tool("ok", "d", SCHEMA).to_dict("openai")))["function"]["name"] == "ok"


def test_parameters_must_be_json():
    with pytest.raises(ToolError, match="parameters.*not JSON-serialisable"):
        Tool("t", "d", {"type": "object", "default": object()})
