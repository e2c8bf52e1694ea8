"""Measuring the assistant: scripted kickoff runs and their checks, answer evaluation on labelled
sets, retrieval evaluation (ir-measures), and the loaders of those sets.

Usage::

    from evaluation.answers import evaluate_answers
    from evaluation.answer_sets import load_answer_set
"""
