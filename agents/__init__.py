"""Role specs → CrewAI / AutoGen agents, LLM backends and tools (the support crew issue)."""
