"""autotool: select a tool for an LLM agent by anchoring a small policy's choice in the tool bank's embedding space."""
