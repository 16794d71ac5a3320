"""The billing project's Lambda code (shipped with the idempotent_messaging runtime)."""
