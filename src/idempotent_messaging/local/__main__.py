"""``python -m idempotent_messaging.local``: the ``idempotent-messaging-local`` command."""

from idempotent_messaging.local.cli import main

raise SystemExit(main())
