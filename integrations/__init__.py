"""Adapters for other products: Rasa Pro's retriever interface, watsonx's custom search service."""
