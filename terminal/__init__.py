"""The terminal chat (``python main.py chat``)."""
