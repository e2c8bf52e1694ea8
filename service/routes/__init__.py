"""The pilot's routes, one ``APIRouter`` per concern: health, sessions, search, the page."""
