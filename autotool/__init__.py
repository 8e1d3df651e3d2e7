"""autotool: select a tool for an LLM agent by anchoring a small policy's choice in the tool bank's embedding space.

from autotool import select_tool
selection = select_tool("Will it rain in Paris tomorrow?")
selection.tool.name, selection.probability, selection.rationale, selection.arguments
"""

from autotool.agent import Agent, Trajectory, tool_from_function
from autotool.policy import AnchorHead, Policy, PolicyError
from autotool.select import Selection, TopTools, select_tool, select_tools

__all__ = [
    "Agent",
    "AnchorHead",
    "Policy",
    "PolicyError",
    "Selection",
    "TopTools",
    "Trajectory",
    "select_tool",
    "select_tools",
    "tool_from_function",
]
