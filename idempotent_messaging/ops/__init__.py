"""Operations CLI for the stack's consumers: `python -m ops --help` (docs/operations.md)."""
