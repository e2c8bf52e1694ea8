"""What the pilot serves to browsers beside its JSON: the chat page and its static files, the
published articles' pages, security headers, HTTP caching."""
