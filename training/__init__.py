"""Training of the shipped models, a developer step (never part of ``make setup``): data
builders, the answerability cross-encoder, the logistic gate, the page choice and the hand-off
intent, each a module with a command line (``python -m training.fit_decision``). Each writes its
fitted file beside the model it belongs to and its figures to bench/results/.
"""
