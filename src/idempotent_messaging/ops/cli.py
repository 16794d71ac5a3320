"""`python -m idempotent_messaging.ops`: consumers, DLQ peek/explain/redrive/purge, owed, run-month.

Against real AWS (default credentials chain) or any emulator (`--endpoint-url`). Consumers and
their queues come from stack outputs: `--stack S` (runs `pulumi stack output --json`),
`--outputs FILE` (a JSON object of outputs, or the state file of a kept emulator), or, with
`--emulator`, the kept emulator of the stack (`make demo KEEP=1`). See docs/operations.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from idempotent_messaging.ops import dlq, owed
from idempotent_messaging.ops.dlq import OpsError
from idempotent_messaging.ops.month import run_month_aws, run_month_in_emulator, validate_month
from idempotent_messaging.ops.outputs import (
    DeployedConsumer,
    OutputsError,
    emulator_state_path,
    find_consumers,
    load_outputs_file,
    pulumi_stack_outputs,
)


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--stack", default="dev", help="stack name (default: dev)")
    source = common.add_mutually_exclusive_group()
    source.add_argument("--outputs", type=Path, help="JSON file of stack outputs")
    source.add_argument(
        "--emulator",
        action="store_true",
        help="use the kept emulator of --stack (.emulator/<stack>.json from `make demo KEEP=1`)",
    )
    common.add_argument("--endpoint-url", help="AWS endpoint (an emulator); default: real AWS")
    common.add_argument("--region", help="AWS region (default: from the environment/profile)")
    common.add_argument("--json", action="store_true", help="machine-readable output")

    parser = argparse.ArgumentParser(
        prog="python -m idempotent_messaging.ops", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("consumers", parents=[common], help="list the consumers and their queue depths")

    def target(p: argparse.ArgumentParser) -> None:
        p.add_argument("consumer", nargs="?", help="consumer name as `consumers` lists it")
        p.add_argument("--dlq-url", help="address a DLQ directly instead of by consumer")

    peek = sub.add_parser(
        "peek", parents=[common], help="show DLQ messages and reasons, consume none"
    )
    target(peek)
    peek.add_argument("--max", type=int, default=10, help="messages to show (default 10)")
    peek.add_argument(
        "--show-body", action="store_true", help="include message bodies (may hold PII)"
    )

    explain = sub.add_parser(
        "explain",
        parents=[common],
        help="say per DLQ message whether its write was applied and a notification is owed",
    )
    target(explain)
    explain.add_argument(
        "--table",
        required=True,
        help="the table holding the consumer's claims: its state table, or its business table "
        "when it keeps the claim in the business item (SingleItemEffect)",
    )
    explain.add_argument(
        "--consumer-code",
        help="module:ATTRIBUTE of the Consumer (e.g. handlers.orders:ORDERS): where its event "
        "id comes from and how its claim key derives; default: body field event_id",
    )
    explain.add_argument(
        "--state-table",
        help="the consumer's state table, where its publication receipts live (needed when "
        "--table is a business table holding claims; default: --table itself)",
    )
    explain.add_argument("--max", type=int, default=10, help="messages to explain (default 10)")

    redrive = sub.add_parser(
        "redrive", parents=[common], help="move DLQ messages back to the source"
    )
    target(redrive)
    redrive.add_argument(
        "--to-url", help="destination queue (default: the consumer's source queue)"
    )
    redrive.add_argument(
        "--dry-run", action="store_true", help="list what would move, move nothing"
    )
    redrive.add_argument("--rate", type=float, help="at most N messages per second")
    redrive.add_argument("--max", type=int, help="move at most N messages (forces receive/send)")
    redrive.add_argument(
        "--method",
        choices=["manual", "native", "auto"],
        default="manual",
        help="manual (default; auto is the same): receive/send/delete, carrying or "
        "establishing each message's first-seen time; native: StartMessageMoveTask, which "
        "establishes none for a copy SQS dead-lettered itself (denied by the component's DLQ "
        "policy unless allow_native_dlq_redrive)",
    )
    redrive.add_argument(
        "--dedup-window",
        choices=["wait", "skip", "new-id"],
        default="wait",
        help="FIFO: a message that entered the DLQ < 5 min ago would be dropped by SQS "
        "deduplication on resend: wait (default), skip it, or send with a new dedup id",
    )

    purge = sub.add_parser("purge", parents=[common], help="delete every message of a queue")
    target(purge)
    purge.add_argument("--queue", choices=["dlq", "source"], default="dlq")
    purge.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    owed = sub.add_parser(
        "owed",
        parents=[common],
        help="list (and re-publish) notifications owed by claims left pending",
    )
    owed.add_argument(
        "--table",
        required=True,
        help="the table holding the claims: the consumer's state table, or its business table "
        "when it keeps the claim in the business item (SingleItemEffect)",
    )
    owed.add_argument(
        "--state-table",
        help="the consumer's state table, where its publication receipts live (needed when "
        "--table is a business table holding claims; default: --table itself)",
    )
    owed.add_argument("--topic-arn", help="SNS topic to re-publish to (needed with --republish)")
    owed.add_argument(
        "--older-than",
        type=int,
        default=3600,
        help="only claims pending for more than N seconds (default 3600)",
    )
    owed.add_argument(
        "--republish",
        action="store_true",
        help="publish each stored owed notification, then mark its claim sent",
    )

    month = sub.add_parser("run-month", parents=[common], help="invoke the monthly dispatcher")
    month.add_argument("--month", required=True, help="billing month YYYY-MM")
    month.add_argument("--target", choices=["aws", "emulator"], default="aws")
    month.add_argument(
        "--seed", type=int, default=0, help="emulator only: seed N demo billing accounts first"
    )
    month.add_argument(
        "--project", type=Path, help="emulator only: Pulumi project dir (default: this repo)"
    )
    return parser


# A kept emulator accepts any credentials; these fake ones keep real ones away from it.
_EMULATOR_CREDENTIALS = {
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
    "aws_session_token": "testing",
}


def _client(args: argparse.Namespace, service: str, **config: Any) -> Any:
    kwargs: dict[str, Any] = dict(_EMULATOR_CREDENTIALS) if args.emulator else {}
    if args.endpoint_url:
        kwargs["endpoint_url"] = args.endpoint_url
    if args.region:
        kwargs["region_name"] = args.region
    if config:
        kwargs["config"] = Config(**config)
    return boto3.session.Session().client(service, **kwargs)


def _outputs(args: argparse.Namespace) -> dict[str, Any]:
    if args.outputs:
        return load_outputs_file(args.outputs)
    if args.emulator:
        path = emulator_state_path(args.stack)
        data = load_outputs_file(path)
        if not args.endpoint_url:
            state = json.loads(path.read_text())
            args.endpoint_url = state.get("endpoint_url")
            args.region = args.region or state.get("region")
        return data
    return pulumi_stack_outputs(args.stack)


def _consumer(args: argparse.Namespace) -> DeployedConsumer:
    if getattr(args, "dlq_url", None):
        return DeployedConsumer(name="(given)", dlq_url=args.dlq_url)
    consumers = find_consumers(_outputs(args))
    names = ", ".join(c.name for c in consumers) or "none"
    if not args.consumer:
        if len(consumers) == 1:
            return consumers[0]
        raise OpsError(f"name a consumer ({names}) or pass --dlq-url")
    for c in consumers:
        if c.name == args.consumer:
            return c
    raise OpsError(f"no consumer {args.consumer!r} in the stack outputs (known: {names})")


def _url(sqs: Any, url: str | None, arn: str | None) -> str:
    if url:
        return url
    if not arn:
        raise OpsError("the outputs give neither a URL nor an ARN for this queue")
    parts = arn.split(":")
    return str(sqs.get_queue_url(QueueName=parts[5], QueueOwnerAWSAccountId=parts[4])["QueueUrl"])


def cmd_consumers(args: argparse.Namespace) -> int:
    consumers = find_consumers(_outputs(args))
    sqs = _client(args, "sqs")
    rows = []
    for c in consumers:
        row: dict[str, Any] = {"name": c.name, "fifo": c.fifo, "function": c.function_name}
        for label, url, arn in (("queue", c.queue_url, c.queue_arn), ("dlq", c.dlq_url, c.dlq_arn)):
            resolved = _url(sqs, url, arn)
            row[f"{label}_url"] = resolved
            depth = dlq.queue_depth(sqs, resolved)
            row[f"{label}_visible"] = depth.get("ApproximateNumberOfMessages", 0)
            row[f"{label}_in_flight"] = depth.get("ApproximateNumberOfMessagesNotVisible", 0)
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no consumers in the stack outputs")
    for r in rows:
        kind = "FIFO" if r["fifo"] else "standard"
        print(f"{r['name']}  ({kind}, function {r['function'] or 'not in the outputs'})")
        for label in ("queue", "dlq"):
            print(
                f"  {label:<5} {r[label + '_url']}  visible={r[label + '_visible']} "
                f"in-flight={r[label + '_in_flight']}"
            )
    return 0


def cmd_peek(args: argparse.Namespace) -> int:
    consumer = _consumer(args)
    sqs = _client(args, "sqs")
    url = _url(sqs, consumer.dlq_url, consumer.dlq_arn)
    messages = dlq.peek(sqs, url, args.max)
    if args.json:
        print(json.dumps([m.to_json(args.show_body) for m in messages], indent=2))
        return 0
    depth = dlq.queue_depth(sqs, url)
    print(f"{url}: {depth.get('ApproximateNumberOfMessages', 0)} visible; showing {len(messages)}")
    for m in messages:
        data = m.to_json(args.show_body)
        group = f" group={m.group_id}" if m.group_id else ""
        print(
            f"- {m.message_id} receives={data['receive_count']}{group} body={data['body_bytes']} B"
        )
        if m.reasonless:
            print(
                "    (no reason attributes: SQS's redrive policy moved it, e.g. after a process "
                "death or timeout on its last receive; `explain` looks up its claim)"
            )
        for name, value in m.reasons().items():
            print(f"    {name}: {value}")
        if args.show_body:
            print(f"    body: {m.body}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    consumer = _consumer(args)
    sqs = _client(args, "sqs")
    url = _url(sqs, consumer.dlq_url, consumer.dlq_arn)
    code = dlq.load_consumer(args.consumer_code) if args.consumer_code else None
    explained = dlq.explain(
        sqs,
        _client(args, "dynamodb"),
        url,
        args.table,
        consumer=code,
        limit=args.max,
        state_table=getattr(args, "state_table", None),
    )
    if args.json:
        print(json.dumps([e.to_json() for e in explained], indent=2))
        return 0
    print(f"{url}: explaining {len(explained)} message(s) from the claims in {args.table}")
    for e in explained:
        origin = "no reason (SQS redrive policy)" if e.reasonless else f"kind={e.failure_kind}"
        print(f"- {e.message_id} event={e.event_id} {origin} claim={e.claim}")
        print(f"    write applied: {e.write_applied}; notification owed: {e.notification_owed}")
        print(f"    {e.advice}")
    return 0


def cmd_redrive(args: argparse.Namespace) -> int:
    consumer = _consumer(args)
    sqs = _client(args, "sqs")
    dlq_url = _url(sqs, consumer.dlq_url, consumer.dlq_arn)
    if args.to_url:
        source = args.to_url
    elif consumer.queue_url or consumer.queue_arn:
        source = _url(sqs, consumer.queue_url, consumer.queue_arn)
    else:
        source = dlq.source_queue_of(sqs, dlq_url)
    probe = _client(args, "sqs", retries={"max_attempts": 1, "mode": "standard"})
    report = dlq.redrive(
        sqs,
        dlq_url,
        source,
        method=args.method,
        rate=args.rate,
        limit=args.max,
        dedup_window=args.dedup_window,
        dry_run=args.dry_run,
        probe=probe,
        log=lambda line: print(line, file=sys.stderr),  # progress: never on stdout
    )
    if args.json:
        print(json.dumps(vars(report), indent=2))
    else:
        for note in report.notes:
            print(f"note: {note}")
        if report.method == "dry-run":
            for m in report.messages:
                reason = m["reasons"].get("failure_reason", "")
                print(f"  would move {m['message_id']} group={m['group_id']} {reason}")
        else:
            print(
                f"{report.method} redrive {dlq_url} -> {source}: moved {report.moved}, "
                f"held back {report.held_back}, failed {report.failed}, "
                f"refused {report.refused}"
                + (f", task {report.task_handle}" if report.task_handle else "")
            )
    return 1 if report.failed or report.refused else 0


def cmd_purge(args: argparse.Namespace) -> int:
    consumer = _consumer(args)
    sqs = _client(args, "sqs")
    if args.queue == "dlq":
        url = _url(sqs, consumer.dlq_url, consumer.dlq_arn)
    else:
        url = _url(sqs, consumer.queue_url, consumer.queue_arn)
    depth = dlq.queue_depth(sqs, url).get("ApproximateNumberOfMessages", 0)
    name = url.rstrip("/").rsplit("/", 1)[-1]
    document = {"queue": name, "url": url, "visible_before": depth, "purged": False}
    if not args.yes:
        if not sys.stdin.isatty():
            raise OpsError("purge needs confirmation: run it in a terminal or pass --yes")
        prompt = f"purge {depth} visible message(s) from {name}? type the queue name: "
        if args.json:  # stdout carries the JSON document alone
            print(prompt, end="", file=sys.stderr, flush=True)
            prompt = ""
        if input(prompt).strip() != name:
            if args.json:
                print(json.dumps(document, indent=2))
            print("not confirmed: nothing purged", file=sys.stderr if args.json else sys.stdout)
            return 1
    dlq.purge(sqs, url)
    if args.json:
        print(json.dumps({**document, "purged": True}, indent=2))
    else:
        print(f"purged {name} ({depth} visible message(s) before the purge)")
    return 0


def cmd_run_month(args: argparse.Namespace) -> int:
    validate_month(args.month)
    if args.target == "emulator":
        # The emulator's program prints its progress and result itself.
        return run_month_in_emulator(
            args.stack, args.month, seed=args.seed, project_dir=args.project
        )
    result = run_month_aws(_client(args, "lambda"), _outputs(args), args.month)
    print(json.dumps(result, indent=2, default=str))
    return 0


def cmd_owed(args: argparse.Namespace) -> int:
    if args.republish and not args.topic_arn:
        raise OpsError("--republish needs --topic-arn (the consumer's notification topic)")
    dynamodb = _client(args, "dynamodb")
    now = int(time.time())
    try:
        claims = list(
            owed.owed_claims(
                dynamodb,
                args.table,
                older_than_s=args.older_than,
                now=now,
                receipts_table=getattr(args, "state_table", None),
            )
        )
    except owed.ReceiptsUnknown as exc:
        raise OpsError(str(exc)) from None
    rows = []
    failed = 0
    sns = _client(args, "sns") if args.republish else None
    for claim in claims:
        row = claim.to_json()
        if args.republish:
            if claim.notification is None:
                row["action"] = "no stored notification: redrive its DLQ message"
            else:
                try:
                    row["published"] = owed.republish(
                        dynamodb, sns, args.table, args.topic_arn, claim, now
                    )
                    row["action"] = "re-published; claim marked sent"
                except (ClientError, BotoCoreError) as exc:
                    failed += 1
                    row["action"] = f"re-publish failed: {exc}"
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{len(rows)} claim(s) pending for more than {args.older_than} s in {args.table}")
        for row in rows:
            stored = "notification stored" if row["notification_stored"] else "not stored"
            print(f"- {row['event_id']} ({stored}) {row.get('action', '')}".rstrip())
            if row["error"]:
                print(f"    SNS said: {row['error']}")
    return 1 if failed else 0


COMMANDS = {
    "owed": cmd_owed,
    "consumers": cmd_consumers,
    "peek": cmd_peek,
    "explain": cmd_explain,
    "redrive": cmd_redrive,
    "purge": cmd_purge,
    "run-month": cmd_run_month,
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (OpsError, OutputsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except NoCredentialsError:
        print(
            "error: no AWS credentials found (configure a profile, or use --emulator for "
            "the kept emulator)",
            file=sys.stderr,
        )
        return 2
    except (ClientError, BotoCoreError) as exc:
        print(f"error: AWS call failed: {exc}", file=sys.stderr)
        return 2
