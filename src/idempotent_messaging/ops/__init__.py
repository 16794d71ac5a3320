"""Operations CLI for the stack's consumers: `python -m idempotent_messaging.ops --help`
(docs/operations.md)."""
