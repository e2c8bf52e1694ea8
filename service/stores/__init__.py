"""What the pilot keeps in Qdrant beside the memory: session headers and marks
(``pilot_store``), labelled outcomes (``outcome_store``), articles and their checks
(``articles``, ``article_checks``), rate limits and widget budgets (``rate_limits``,
``key_budget``), upkeep marks (``upkeep_marks``). Each parses what it reads."""
