"""Reusable Pulumi ComponentResources for correct-by-default SQS -> Lambda pipelines."""
