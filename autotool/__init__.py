"""autotool: select a tool for an LLM agent by anchoring a small policy's choice in the tool bank's embedding space.

from autotool import select_tool
selection = select_tool("Will it rain in Paris tomorrow?")
selection.tool.name, selection.probability, selection.rationale, selection.arguments

The names below are imported on first use, so `import autotool` (and `autotool select --mode fast`) loads
neither PyTorch nor a language model until something needs one.
"""

import importlib

_EXPORTS = {
    "Agent": "autotool.agent",
    "Trajectory": "autotool.agent",
    "tool_from_function": "autotool.agent",
    "AnchorHead": "autotool.head",
    "Policy": "autotool.policy",
    "PolicyError": "autotool.policy",
    "Selection": "autotool.select",
    "TopTools": "autotool.select",
    "select_tool": "autotool.select",
    "select_tools": "autotool.select",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'autotool' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
