"""A role's typed output from whatever a framework returned: its pydantic result, JSON text,
or JSON inside text.

Usage::

    judgement = parse_output(crew_output, Judgement)      # raises RoleFailed when unusable
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError


class RoleFailed(RuntimeError):
    """A role produced no usable output."""


def parse_output(result: Any, output_model: type[Any]) -> Any:
    """A role's typed output from a crew result, its raw text, or JSON inside text."""
    if isinstance(result, output_model):
        return result
    if isinstance(getattr(result, "pydantic", None), output_model):
        return result.pydantic
    raw = str(getattr(result, "raw", result))
    try:
        return output_model.model_validate_json(raw)
    except ValidationError:
        pass
    try:
        return output_model.model_validate(json.loads(raw[raw.index("{") : raw.rindex("}") + 1]))
    except (ValueError, ValidationError) as exc:
        raise RoleFailed(f"unusable {output_model.__name__}: {raw[:200]}") from exc
