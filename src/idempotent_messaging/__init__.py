"""idempotent-messaging: Pulumi components, Lambda runtime and CrossGuard policy pack.

Only the version lives here: this module ships inside every Lambda archive (the runtime is
``idempotent_messaging.runtime``), so it must import nothing.
"""

__version__ = "0.2.0"
