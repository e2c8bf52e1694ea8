"""The four tasks, their typed outputs and the turn orchestration (the support crew issue)."""
