"""Names shared by the stack and the Lambda runtime: environment variables and key schemas.

The components set these variables and create tables with these keys; the runtime reads them
(``settings.Settings.from_env``). Names only, no code: components/ imports them without
pulling in boto3, and no function of this module runs on a message's path.
"""

from __future__ import annotations

# --- Environment variables set on every consumer function -------------------------------------
STATE_TABLE = "IDEMPOTENCY_STATE_TABLE"  # name of the state (idempotency) table
STATE_KEY_LAYOUT = "STATE_KEY_LAYOUT"  # "event_id" or "tenant" (claims.state_key)
STATE_TTL_ATTRIBUTE = "STATE_TTL_ATTRIBUTE"  # TTL attribute name on the state table
CLAIM_TTL_SECONDS = "CLAIM_TTL_SECONDS"  # lifetime of a claim record
BUSINESS_TABLE = "BUSINESS_TABLE"  # name of the business table (optional)
NOTIFICATION_TOPIC_ARN = "NOTIFICATION_TOPIC_ARN"  # SNS topic for notifications (optional)
DLQ_URL = "DLQ_URL"  # dead-letter queue for quarantine
# The DLQ's MaximumMessageSize in bytes (1,024 .. 1,048,576): DLQ copies are sized against it
# (quarantine.dlq_limits; unset: copies fitted to 1 MiB, sent in batches of <= 256 KiB).
DLQ_MAX_MESSAGE_BYTES = "DLQ_MAX_MESSAGE_BYTES"
SOURCE_QUEUE_FIFO = "SOURCE_QUEUE_FIFO"  # "true" when the source queue is FIFO
SOURCE_RETENTION_SECONDS = "SOURCE_RETENTION_SECONDS"
DLQ_RETENTION_SECONDS = "DLQ_RETENTION_SECONDS"
# The source queue's redrive maxReceiveCount: a record failing on that receive is quarantined
# with its error instead of being dead-lettered by SQS without a reason.
MAX_RECEIVE_COUNT = "MAX_RECEIVE_COUNT"
# Which content identifies an event (claims' fingerprint): a JSON array of JMESPath expressions
# over the decoded body, set by the component only when the consumer's args name them; unset:
# the consumer's own Consumer(fingerprint=...) declaration, by default the whole body.
FINGERPRINT_FIELDS = "FINGERPRINT_FIELDS"
# No longer set by the components (the runtime has one way to claim). Deployments made before
# still carry IDEMPOTENCY_STRATEGY=transactional: that stale value is accepted and ignored, any
# other value is refused (settings.Settings.from_env).
IDEMPOTENCY_STRATEGY = "IDEMPOTENCY_STRATEGY"
STALE_IDEMPOTENCY_STRATEGY = "transactional"
# Powertools' own settings (documented by Powertools)
POWERTOOLS_SERVICE_NAME = "POWERTOOLS_SERVICE_NAME"
POWERTOOLS_LOG_LEVEL = "POWERTOOLS_LOG_LEVEL"
POWERTOOLS_METRICS_NAMESPACE = "POWERTOOLS_METRICS_NAMESPACE"

# --- State table key schemas ------------------------------------------------------------------
LAYOUT_EVENT_ID = "event_id"
LAYOUT_TENANT = "tenant"
EVENT_ID_KEY = "event_id"  # event-id layout: partition key of the state table
TENANT_PARTITION_KEY = "pk"  # tenant layout: tenant id
TENANT_SORT_KEY = "sk"  # tenant layout: "<namespace>#<event id>"
DEFAULT_TTL_ATTRIBUTE = "ttl"
DEFAULT_CLAIM_TTL_SECONDS = 90 * 24 * 3600  # 90 days

# --- Content fingerprint of a claim (a re-sent event id with other content is a conflict) ------
STATE_CLAIM_FINGERPRINT = "fingerprint"  # on a state-table claim (in-item: ITEM_CLAIM_FINGERPRINT)
CONFLICTING_DUPLICATE = "conflicting_duplicate"  # its DLQ failure_kind and its EMF metric name

# --- Claim status values (exactly two) ---------------------------------------------------------
STATUS_PENDING = "pending"
STATUS_SENT = "sent"

# --- The event's first-seen time, carried from copy to copy -----------------------------------
# A DLQ copy (runtime quarantine) and a redriven message (ops redrive) are NEW SQS messages with
# a fresh SentTimestamp and retention: this message attribute (epoch milliseconds, Number)
# carries the earliest time the event was seen, so a copy older than its claim can be refused.
FIRST_SEEN_ATTRIBUTE = "idempotent-messaging.first-seen"

# --- Remaining-time guard ---------------------------------------------------------------------
# Stop starting AWS calls when less than this many milliseconds of Lambda time remain.
REMAINING_TIME_GUARD_MS = "REMAINING_TIME_GUARD_MS"
DEFAULT_REMAINING_TIME_GUARD_MS = 5_000

# --- Set by the components ---------------------------------------------------------------------
POWERTOOLS_TRACE_DISABLED = "POWERTOOLS_TRACE_DISABLED"  # "true" when X-Ray tracing is off

# --- Claim kept in the business item (SingleItemEffect) ---------------------------------------
# Prefixed so they cannot collide with a business attribute (the runtime refuses a Put that
# sets them).
ITEM_CLAIM_EVENT_ID = "claim_event_id"
ITEM_CLAIM_STATUS = "claim_status"
ITEM_CLAIM_MESSAGE_ID = "claim_message_id"
ITEM_CLAIM_RECEIVED_AT = "claim_received_at"
ITEM_CLAIM_SENT_AT = "claim_sent_at"
ITEM_CLAIM_NOTIFICATION_ID = "claim_notification_id"
ITEM_CLAIM_OWED = "claim_owed_notification"
ITEM_CLAIM_FINGERPRINT = "claim_fingerprint"  # the first copy's content fingerprint
# The receipt a fresh claim names (chosen before the commit): claims.Receipts.
ITEM_CLAIM_RECEIPT = "claim_receipt"
ITEM_CLAIM_ATTRIBUTES = (
    ITEM_CLAIM_EVENT_ID,
    ITEM_CLAIM_STATUS,
    ITEM_CLAIM_MESSAGE_ID,
    ITEM_CLAIM_RECEIVED_AT,
    ITEM_CLAIM_SENT_AT,
    ITEM_CLAIM_NOTIFICATION_ID,
    ITEM_CLAIM_OWED,
    ITEM_CLAIM_FINGERPRINT,
    ITEM_CLAIM_RECEIPT,
)

# --- A domain-keyed row (DomainKeyedCreate): the event id the row records ----------------------
# The claim is a state-table item keyed by the event; the business row, keyed by the consumer's
# own business key (order_id), records the event that created it, so a redelivery tells its own
# row (written before a crash) from another event's (a business conflict).
ROW_EVENT_ID = "applied_event_id"

# --- Publication receipts (claims.Receipts), in the component's STATE table -------------------
# A fresh claim is written `pending` and names its batch's receipt (`receipt` on a state-table
# claim, `claim_receipt` in a business item). After the publish ONE item per batch (per
# RECEIPT_MAX_BYTES of entries) lists the claims whose notifications went out: a claim is done
# when it is `sent` (claims written before receipts, or republished ones) or its receipt lists
# it. The receipt carries the claim TTL (same dedup horizon).
STATE_CLAIM_RECEIPT = "receipt"
RECEIPT_KEY_PREFIX = "receipt#"  # + a random id: event-id layout `event_id`, tenant layout `pk`
RECEIPT_SORT_KEY = "receipt"  # tenant layout: `sk` of a receipt item
RECEIPT_PUBLISHED = "published"  # string set of the claims' receipt entries
RECEIPT_WRITTEN_AT = "written_at"
RECEIPT_MAX_BYTES = 300 * 1024
"""Entries per receipt item: under DynamoDB's 400 KB item limit with room for names and key;
a receipt is billed 1 write unit per KB whatever its chunking, so it is split only there."""

# --- What the runtime calls on each table: runtime/grants.py derives it per consumer from its
# declaration (claim placement, queue type, notification topic, business write kinds); the
# components grant exactly that.
