"""The reference program's own Lambda code (the ``orders`` and ``charges`` consumers).

Deployed like any user's code: __main__.py passes this directory as the consumers' ``code``
and the components add the library's runtime (``idempotent_messaging.runtime``) to the archive.
Lambda code: it must never import pulumi, the components or the policy pack.
"""
