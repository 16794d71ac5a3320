"""`python -m idempotent_messaging.offline` (or `idempotent-messaging-check`): the offline
policy check's command line (``offline.cli``)."""

from .cli import run

if __name__ == "__main__":
    run()
