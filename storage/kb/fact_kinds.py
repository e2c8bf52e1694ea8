"""One pattern per kind of fact a support conversation names: ingest tags pages with them
(``storage/kb/entities.py``), entity memory remembers them from the customer's messages
(``tasks/entities.py``) and the support check requires them to stand in the passage
(``tasks/facts.py``).

Usage::

    ERROR_CODE.findall("Sync fails with E-429 or SSO-104")     # ['E-429', 'SSO-104']
    CUSTOMER_REFERENCE["order"].search("about ORD-55812")       # the customer's own order id
"""

from __future__ import annotations

import re

# an error or reference code as help pages write it: PAY-102, SSO-104, E-429
ERROR_CODE = re.compile(r"\b[A-Z]{1,6}-\d{2,6}\b")
# any code-shaped token a claim may carry (E429, ERR_5, PAY-102-B): it must stand in the passage
CODE_TOKEN = re.compile(r"\b[A-Z]{1,6}[-_]?\d[\w-]*\b")
# a code as a customer types it (e-429), not the tail of a hyphenated name (build-server-7)
ANY_CASE_CODE = re.compile(r"(?<![\w-])[A-Za-z]{1,6}[-_]\d[\w-]*\b")
# the customer's own references: no help page holds them
CUSTOMER_REFERENCE: dict[str, re.Pattern[str]] = {
    "order": re.compile(r"\bORD-\d{3,}\b", re.IGNORECASE),
    "invoice": re.compile(r"\bINV-\d{4}-\d{3,}\b", re.IGNORECASE),
    "refund": re.compile(r"\bRF-\d{3,}\b", re.IGNORECASE),
    "email": re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"),
}
REFERENCE_PREFIXES = ("ORD-", "INV-", "RF-")
PLAN_NAMES = ("basic", "pro", "enterprise")
PLAN = re.compile(r"\b(" + "|".join(p.title() for p in PLAN_NAMES) + r")\b")
