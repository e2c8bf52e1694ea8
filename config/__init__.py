"""Configuration: the shipped YAML defaults and the pydantic models that validate them."""

from config.settings import ConfigError, Settings, load_settings

__all__ = ["ConfigError", "Settings", "load_settings"]
