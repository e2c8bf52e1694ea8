"""Sources of the knowledge base beyond files: a help-center site, a Zendesk Guide export."""
