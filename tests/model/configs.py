"""The configurations checked, at two bounds (``small``: ``make test``; ``large``:
``make model-check``), and what each is expected to show.

Every configuration runs the model with the features the code has today
(``Features.of_code``); those whose outcome depends on a feature (the content fingerprint,
the first-seen horizon) are checked with the feature off and on, each with its expectation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tests.model.protocol import Config, Content, Features, Send

BOUNDS = ("small", "large")

E1, E2, E3, POISON, E1B, E2X = 0, 1, 2, 3, 4, 5
CONTENTS = (
    Content(0),
    Content(1),
    Content(2),
    Content(-1),
    Content(0, body=1),  # e1 re-sent with other content (another order_id: another row)
    Content(1, body=1, row=E1),  # DomainKeyedCreate: e2 for e1's business key (order_id)
)
PLACEMENTS = ("item", "separate", "domain")
"""ItemClaims, StateTableClaims, ClaimThenRow (DomainKeyedCreate)."""
EVENTS = ("e1", "e2", "e3")


DEFECT_IN_BATCH_CONFLICT = (
    "DEFECT found by the model and fixed (BatchRun._mark_in_batch_duplicates judged too early; "
    "now BatchRun._resolve_shadows, after the first copy's verdict): e1' is claimed first and its "
    "delivery dies before the publish; e1 and e1' then arrive in one batch, e1 first. The "
    "in-batch rule takes e1 for the claimant and quarantines e1' as conflicting_duplicate "
    "although the claim holds e1''s content, and e1 meets that claim: conflicting_duplicate "
    "too. The claim stays pending, its notification is never published and no DLQ copy says "
    "it is owed"
)


@dataclass(frozen=True)
class Expectation:
    config: Config
    violates: frozenset[str] = frozenset()
    """Invariants one of which the checker must find violated (empty: none may be)."""
    why: str = ""


def _base(bound: str, features: Features, **changes: object) -> Config:
    """The small bound: batches of 2, 2 invocations at a time, maxReceiveCount 2, one death
    or time-out and one AWS fault per run. Each family says what its large bound adds."""
    config = Config(
        name="",
        placement="item",
        events=EVENTS,
        contents=CONTENTS,
        sends=(Send(E1), Send(E2)),
        batch=2,
        concurrency=2,
        max_receive=2,
        crashes=1,
        faults=1,
        features=features,
    )
    return replace(config, **changes)  # type: ignore[arg-type]


def standard(bound: str, placement: str, features: Features) -> Config:
    """Two events, in one batch or apart; every fault, death and time-out (large: two deaths
    or time-outs and two faults per run)."""
    large = bound == "large"
    return _base(
        bound,
        features,
        name=f"standard/{placement}",
        placement=placement,
        crashes=2 if large else 1,
        faults=2 if large else 1,
    )


def standard_three(bound: str, placement: str, features: Features) -> Config:
    """Three events in batches of up to three (large bound only)."""
    return _base(
        bound,
        features,
        name=f"standard-three/{placement}",
        placement=placement,
        sends=(Send(E1), Send(E2), Send(E3)),
        batch=3,
    )


def duplicates(bound: str, placement: str, features: Features) -> Config:
    """A producer re-send of e1 (same id, same body): in e1's batch, concurrent with it in
    another invocation, or later (large: two re-sends, three invocations at a time)."""
    sends: tuple[Send, ...] = (Send(E1), Send(E1, optional=True))
    if bound == "large":
        sends = (*sends, Send(E1, optional=True))
    return _base(
        bound,
        features,
        name=f"duplicates/{placement}",
        placement=placement,
        sends=sends,
        concurrency=3 if bound == "large" else 2,
    )


def poison(bound: str, placement: str, features: Features) -> Config:
    """A poison message next to an event: quarantine, DLQ faults, the last receive (large:
    two deaths or time-outs and two faults per run)."""
    large = bound == "large"
    return _base(
        bound,
        features,
        name=f"poison/{placement}",
        placement=placement,
        sends=(Send(E1), Send(POISON)),
        crashes=2 if large else 1,
        faults=2 if large else 1,
    )


def fifo(bound: str, placement: str, features: Features) -> Config:
    """One group: e1, poison, e2, in batches of up to three (large: two deaths or time-outs,
    two faults, maxReceiveCount 3)."""
    large = bound == "large"
    return _base(
        bound,
        features,
        name=f"fifo/{placement}",
        placement=placement,
        fifo=True,
        sends=(Send(E1, "a"), Send(POISON, "a"), Send(E2, "a")),
        batch=3,
        crashes=2 if large else 1,
        faults=2 if large else 1,
        max_receive=3 if large else 2,
    )


def fifo_groups(bound: str, placement: str, features: Features) -> Config:
    """Group a: e1, e2; group b: e3: one group held back while the other goes on, one
    PublishBatch entry per group (large: two deaths or time-outs per run)."""
    large = bound == "large"
    return _base(
        bound,
        features,
        name=f"fifo-groups/{placement}",
        placement=placement,
        fifo=True,
        sends=(Send(E1, "a"), Send(E2, "a"), Send(E3, "b")),
        batch=3,
        crashes=2 if large else 1,
    )


def different_body(bound: str, placement: str, features: Features) -> Config:
    """A re-send of e1 with the same id and ANOTHER body, concurrent with e1 or later."""
    large = bound == "large"
    return _base(
        bound,
        features,
        name=f"different-body/{placement}",
        placement=placement,
        sends=(Send(E1), Send(E1B, optional=True)),
        crashes=2 if large else 1,
        faults=2 if large else 1,
    )


def claim_ttl(bound: str, features: Features) -> Config:
    """Time: claims expire (and are deleted any time later), retention, SQS's own redrive; a
    re-send within a tick of the first send; no operator redrive (large: a longer clock,
    two deaths or time-outs)."""
    large = bound == "large"
    return _base(
        bound,
        features,
        name="claim-ttl/separate-claim",
        placement="separate",
        sends=(Send(E1), Send(E1, optional=True, latest=1)),
        time=6 if large else 5,
        source_retention=2,
        dlq_retention=2,
        claim_ttl=4,
        crashes=2 if large else 1,
    )


def redrive(bound: str, features: Features) -> Config:
    """Time and the operator: quarantine (owed notifications, exhausted receives), SQS's own
    redrive and ``ops redrive`` cycles, each a NEW message with fresh retention, publication
    receipts deleted by their TTL; the native move task where the DLQ policy allows it (large:
    three redrives, two deaths or time-outs, two faults, a longer clock)."""
    large = bound == "large"
    return _base(
        bound,
        features,
        name="redrive/separate-claim",
        placement="separate",
        sends=(Send(E1),),
        time=8 if large else 6,
        source_retention=1,
        dlq_retention=1,
        claim_ttl=2,
        redrives=3 if large else 2,
        batch=1,
        concurrency=1,
        crashes=2 if large else 1,
        faults=2 if large else 1,
        fault_kinds=frozenset({"entry-sender", "commit-fail", "publish-fail", "dlq-fail"}),
        native_move=not features.native_move_denied,
    )


def native_move(bound: str, features: Features) -> Config:
    """The operator's redrive button: a death on the last receive (maxReceiveCount 1), SQS's
    bare copy, native move tasks and ``ops redrive``, the claim expiring (TTL = source + DLQ
    retention); the native move only where the DLQ policy allows it (large: three deaths and
    three redrives, a longer clock)."""
    large = bound == "large"
    return _base(
        bound,
        features,
        name="native-move/separate-claim",
        placement="separate",
        sends=(Send(E1),),
        time=6 if large else 4,
        source_retention=1,
        dlq_retention=2,
        claim_ttl=3,
        redrives=3 if large else 2,
        batch=1,
        concurrency=1,
        max_receive=1,
        crashes=3 if large else 2,
        faults=0,
        fault_kinds=frozenset(),
        native_move=not features.native_move_denied,
    )


def redrive_fifo(bound: str, features: Features) -> Config:
    """A FIFO queue and DLQ: SQS's move to a FIFO DLQ resets the copy's enqueue time, so a
    bare copy's SentTimestamp may be up to one source retention later than its original's;
    ``ops redrive`` cycles; source retention 2, claim TTL 3 (large: two redrives and deaths,
    a longer clock)."""
    large = bound == "large"
    return _base(
        bound,
        features,
        name="redrive-fifo/separate-claim",
        placement="separate",
        fifo=True,
        sends=(Send(E1, "a"),),
        time=6 if large else 5,
        source_retention=2,
        dlq_retention=1,
        claim_ttl=3,
        redrives=2 if large else 1,
        batch=1,
        concurrency=1,
        crashes=2,
        faults=0,
        fault_kinds=frozenset(),
    )


def late_resend(bound: str, features: Features) -> Config:
    """A producer re-send of e1 one or two ticks after e1, the claim TTL two ticks: without
    the event's own time in the body (``EventTimeFromBody``) the re-send is a new message,
    first seen when sent (large: two invocations, two redrives, a longer clock)."""
    large = bound == "large"
    return replace(
        redrive(bound, features),
        name="late-resend/separate-claim",
        sends=(Send(E1), Send(E1, optional=True, earliest=1, latest=2)),
        concurrency=2 if large else 1,
        time=6 if large else 5,
        redrives=2 if large else 1,
        crashes=1,
        faults=1,
    )


def business_conflict(bound: str, features: Features) -> Config:
    """DomainKeyedCreate: e1 and e2 (another event) create the SAME business row (one order
    id): one of them is the row, the other a business conflict, to the DLQ with its reason and
    its claim released, in one batch or apart, concurrently (small: one death or time-out, no
    fault; large: two of each)."""
    large = bound == "large"
    return _base(
        bound,
        features,
        name="business-conflict/claim-then-row",
        placement="domain",
        sends=(Send(E1), Send(E2X)),
        crashes=2 if large else 1,
        # Small: no fault (the duplicates configuration has every fault of the claim and row).
        faults=2 if large else 0,
    )


def redrive_item(bound: str, features: Features) -> Config:
    """The same with the claim in the business item (no TTL: the claim lives with the row)."""
    return replace(redrive(bound, features), name="redrive/claim-in-item", placement="item")


def expectations(bound: str, features: Features | None = None) -> list[Expectation]:
    """Every configuration with what the checker must find, for the code's features."""
    f = features if features is not None else Features.of_code()
    out: list[Expectation] = []
    families = [standard, duplicates, poison, fifo, fifo_groups]
    if bound == "large":
        families.insert(1, standard_three)
    for family in families:
        for placement in PLACEMENTS:
            if placement == "domain" and bound == "small" and family is not duplicates:
                # Small bound: the re-send of one event covers the claim, a death or a fault
                # before and after its row, a concurrent copy, and the redelivery's row
                # completion; two events, poison and FIFO (the separate claim's transaction)
                # at the large bound.
                continue
            out.append(Expectation(family(bound, placement, f)))
    out.append(Expectation(business_conflict(bound, f)))
    for placement in PLACEMENTS:
        for fingerprint in (False, True):
            g = replace(f, fingerprint=fingerprint)
            config = different_body(bound, placement, g)
            config = replace(
                config, name=f"{config.name}/fingerprint-{'on' if fingerprint else 'off'}"
            )
            if not fingerprint and placement == "domain":
                violates = frozenset({"at-most-once", "no-silent-delete", "exactly-once"})
                why = (
                    "without the fingerprint a same-id different-body re-send meets the claim "
                    "as a pending duplicate and writes ITS row (another order_id): a second "
                    "effect of one event (why a copy's claim must be known to be its own)"
                )
            elif not fingerprint:
                violates = frozenset({"no-silent-delete", "exactly-once"})
                why = (
                    "without the fingerprint a same-id different-body re-send is skipped as a "
                    "duplicate: its content is dropped without a DLQ copy"
                )
            else:  # the in-batch conflict is judged after the first copy's verdict
                violates, why = frozenset(), ""
            out.append(Expectation(config, violates, why))
    out.append(Expectation(claim_ttl(bound, f)))
    for horizon in (False, True):
        g = replace(f, horizon=horizon)
        config = redrive(bound, g)
        config = replace(config, name=f"{config.name}/horizon-{'on' if horizon else 'off'}")
        out.append(
            Expectation(
                config,
                frozenset() if horizon else frozenset({"at-most-once"}),
                ""
                if horizon
                else "without the first-seen horizon, quarantine + redrive cycles outlive the "
                "claim TTL: the claim expires and a redriven copy applies the effect again",
            )
        )
    if bound == "large":
        config = redrive(bound, replace(f, horizon=True, redrive_carries_sent_time=False))
        out.append(
            Expectation(
                replace(config, name=f"{config.name}/horizon-on/redrive-without-sent-time"),
                frozenset({"at-most-once"}),
                "an SQS-moved (bare) copy has no first-seen attribute: unless ops redrive "
                "writes it from the copy's SentTimestamp, each redrive starts the horizon "
                "again and death-on-last-receive cycles outlive the claim",
            )
        )
    for event_time in (False, True):
        config = late_resend(bound, f)
        config = replace(
            config,
            name=f"{config.name}/event-time-{'on' if event_time else 'off'}",
            event_time=event_time,
        )
        out.append(
            Expectation(
                config,
                frozenset() if event_time else frozenset({"at-most-once"}),
                ""
                if event_time
                else "a producer re-send later than claim TTL - source retention, without the "
                "event's own time, is a new message: applied again once the claim is deleted "
                "(the documented limit; EventTimeFromBody closes it)",
            )
        )
    out.append(Expectation(redrive_item(bound, f)))
    # DomainKeyedCreate: the row records its event, so a same-content re-send after its
    # claim's TTL meets the row (verified: no second effect) even without the event time; a
    # re-send with OTHER content after the claim is gone is the documented limit again.
    config = replace(late_resend(bound, f), placement="domain")
    out.append(Expectation(replace(config, name="late-resend/claim-then-row/event-time-off")))
    config = replace(
        late_resend(bound, f),
        placement="domain",
        sends=(Send(E1), Send(E1B, optional=True, earliest=1, latest=2)),
    )
    out.append(
        Expectation(
            replace(config, name="late-resend/claim-then-row/other-content/event-time-off"),
            frozenset({"at-most-once"}),
            "a producer re-send with OTHER content (another business key) after the claim is "
            "gone names another row: the documented limit, closed by EventTimeFromBody",
        )
    )
    config = redrive(bound, f)
    out.append(Expectation(replace(config, name="redrive/claim-then-row", placement="domain")))
    # The claim in the business item has no TTL, hence no horizon: the native move task (an
    # opted-out DLQ policy) cannot make a copy outlive it.
    config = replace(redrive_item(bound, f), native_move=True)
    out.append(Expectation(replace(config, name=f"{config.name}/native-move-allowed")))
    out.append(Expectation(native_move(bound, f)))
    out.append(Expectation(redrive_fifo(bound, f)))
    return out


# What the guards of issue 37 (item 1) close: the shortest counterexamples of the protocol before
# them (tests/model/test_model.py shows each reachable there and not any more).
NATIVE_MOVE_TRACE = (
    "the native move task gives an SQS-moved (bare) copy a new SentTimestamp and no first-seen "
    "time: commit, a death before the publish on the last receive, SQS's bare copy, a native "
    "move, a death before the commit, bare again, the claim TTL passes, ops redrive stamps the "
    "native move's time: the copy passes the horizon and commits a second time"
)
OWED_BEHIND_HORIZON = (
    "a copy beyond the horizon refused without reading its claim: the claim is live and "
    "pending, its copy was redriven late, nothing publishes the owed notification"
)


# --- mutations: each must yield a counterexample of one of the invariants named ----------------


def mutations(bound: str = "small", features: Features | None = None) -> list[Expectation]:
    f = features if features is not None else Features.of_code()

    def mutant(config: Config, mutation: str, *violates: str) -> Expectation:
        name = f"{config.name}+{mutation}"
        return Expectation(
            replace(config, name=name, mutations=frozenset({mutation})), frozenset(violates)
        )

    std_item = duplicates(bound, "item", f)
    std_sep = duplicates(bound, "separate", f)
    fifo_item = fifo_groups(bound, "item", f)
    poison_item = poison(bound, "item", f)
    return [
        mutant(native_move(bound, f), "native-move-allowed", "at-most-once"),
        mutant(redrive(bound, f), "horizon-refuses-unread", "notified"),
        mutant(redrive_fifo(bound, f), "fifo-stamps-dlq-time", "at-most-once"),
        mutant(std_sep, "absent-receipt-as-listed", "notified"),
        mutant(
            replace(
                different_body(bound, "domain", replace(f, fingerprint=True)),
                name="different-body/domain/fingerprint-on",
            ),
            "row-before-claim",
            "at-most-once",
            "no-silent-delete",
        ),
        mutant(fifo_item, "no-fifo-hold", "fifo-order"),
        mutant(std_item, "pending-as-sent", "notified"),
        mutant(std_sep, "write-before-claim", "at-most-once"),
        mutant(
            claim_ttl(bound, replace(f, horizon=False)),
            "ttl-shorter-than-retention",
            "at-most-once",
        ),
        mutant(claim_ttl(bound, f), "ttl-shorter-than-retention", "at-most-once", "dlq-explained"),
        mutant(poison_item, "quarantine-without-reason", "dlq-explained"),
        mutant(std_item, "publish-before-commit", "notify-after-effect"),
        mutant(std_sep, "mark-before-publish", "notified"),
        mutant(std_item, "failures-not-reported", "no-silent-delete"),
        mutant(std_item, "no-last-receive-quarantine", "dlq-explained"),
        mutant(std_item, "shadow-ignores-first", "no-silent-delete"),
        mutant(std_item, "owed-not-quarantined", "notified"),
        *(
            mutant(
                replace(
                    different_body(bound, placement, replace(f, fingerprint=True)),
                    name=f"different-body/{placement}/fingerprint-on",
                ),
                "early-in-batch-conflict",
                "notified",
                "dlq-explained",
            )
            for placement in ("item", "separate")
        ),
    ]
