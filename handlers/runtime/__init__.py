"""Idempotent consumer runtime: database exactly-once, notification at-least-once."""
