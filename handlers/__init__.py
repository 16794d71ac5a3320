"""Lambda code: the idempotent consumer runtime and the reference entry points.

This package is the Lambda bundle: it must never import pulumi, components/ or policy/.
"""
