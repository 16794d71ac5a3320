"""Embedded AWS emulator: moto on loopback, a Pulumi-mocks deployer, an SQS event-source poller.

`make demo` runs the dev stack's own `__main__.py` against it (see docs/operations.md).
Development tooling only: never imported by handlers/, components/, policy/ or ops/.
"""
