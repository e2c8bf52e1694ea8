"""The pilot's domain: what a stored session header and a stored mark hold (one definition
each, :mod:`service.domain.records`), used by the stores and the routes alike."""
