"""The agents' tools: the turn's knowledge-base search and evidence tools, framework-free, with
one thin adapter per framework.

Usage::

    from agents.tools.search import KnowledgeBaseSearch
    tool = KnowledgeBaseSearch.for_turn(retriever, slots={"tier": "basic"}, original="...")
"""
