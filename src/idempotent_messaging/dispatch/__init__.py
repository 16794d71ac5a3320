"""Monthly charge dispatcher: enumerates billable items and enqueues one charge per
(tenant, employee, month) on the FIFO work queue.

Entry point: ``idempotent_messaging.dispatch.app.handler``. Pure modules (``env``, ``keys``) import
nothing beyond the standard library, so components/ may import their constants.
"""
