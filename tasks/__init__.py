"""What a turn decides, framework-free: the evidence gates, the answer and refusal results, the
prompts' inputs, the answerability model, follow-ups, facts and memory context.

Usage::

    from tasks.gates import evidence_route
"""
