"""The customer-support pilot: an HTTP service and its web chat page (``python main.py serve``)."""
