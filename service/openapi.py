"""The pilot's OpenAPI schema as a file (docs/openapi.json): what a client generator reads. A
test fails when the routes change and the file does not (``python main.py openapi --output
docs/openapi.json`` writes it).

Usage::

    text = schema_text(settings)     # sorted, indented JSON with a final newline
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from config.settings import Settings


def schema_text(settings: Settings) -> str:
    from service.app import create_app

    with tempfile.TemporaryDirectory() as nowhere:  # the schema needs no runtime, no store
        app = create_app(
            settings.model_copy(update={"pilot": settings.pilot.model_copy(update={"api_keys": []})}),
            Path(nowhere),
        )
        return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"
