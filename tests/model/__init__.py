"""The redelivery protocol of the consumer runtime, model-checked (docs/model.md).

``protocol`` is the model (what each action does, which code it models), ``configs`` the
configurations at each bound, ``checker`` the explicit-state breadth-first checker;
``python -m tests.model [--bound small|large]`` runs them all.
"""
