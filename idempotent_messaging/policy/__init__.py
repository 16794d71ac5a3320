"""CrossGuard policy pack for SQS -> Lambda pipelines (stands alone: see pyproject contracts)."""
