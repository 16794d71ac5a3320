"""Where billable items come from, behind one small interface.

A source is split into ``total_segments`` disjoint segments read page by page; a page returns
the items and an opaque JSON-serialisable cursor (None when the segment is exhausted). The
dispatcher checkpoints that cursor after the page's charges are enqueued, so any invocation can
resume any segment exactly where the last checkpoint left it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .keys import BillableItem, InvalidItem

Cursor = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Rejected:
    """An item the source holds but that cannot be charged: logged by its key (``ref``: the
    table's tenant/employee, a manifest line's byte offset) and the rule it broke (``reason``:
    field and rule, never the value)."""

    ref: str
    reason: str


@dataclass(frozen=True, slots=True)
class Page:
    items: list[BillableItem]
    cursor: Cursor | None
    """Where the next page starts; None = the segment is exhausted."""
    rejected: list[Rejected] = field(default_factory=list)


class ItemSource(Protocol):
    """A segmented, resumable enumeration of billable items for one month.

    A source whose content can change under a run (the S3 manifest) also offers
    ``version(month) -> str`` (pinned in the run record when a generation starts) and
    ``pin(month, version)`` (later reads of another version raise ``SourceChanged``); the
    dispatcher uses them when present.
    """

    def read_page(
        self, month: str, segment: int, total_segments: int, cursor: Cursor | None
    ) -> Page: ...


class SourceError(RuntimeError):
    """The source itself is broken (missing manifest, unreadable line): the run must fail."""


class SourceChanged(SourceError):
    """The source changed under a running generation: its checkpoints (byte offsets) no
    longer describe it, so going on would skip or repeat lines."""


class DynamoDBAccountsSource:
    """The ``billing_accounts`` table: parallel Scan segments (Segment/TotalSegments), only
    ``active = true`` items, ``Limit`` items evaluated per page, resumed by LastEvaluatedKey."""

    def __init__(self, client: Any, table_name: str, page_size: int) -> None:
        self._client = client
        self._table = table_name
        self._page_size = page_size

    def read_page(
        self, month: str, segment: int, total_segments: int, cursor: Cursor | None
    ) -> Page:
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "Segment": segment,
            "TotalSegments": total_segments,
            "Limit": self._page_size,
            "FilterExpression": "#active = :true",
            "ProjectionExpression": "tenant_id, employee_id, amount, currency",
            "ExpressionAttributeNames": {"#active": "active"},
            "ExpressionAttributeValues": {":true": {"BOOL": True}},
        }
        if cursor is not None:
            kwargs["ExclusiveStartKey"] = cursor["last_evaluated_key"]
        response = self._client.scan(**kwargs)
        items: list[BillableItem] = []
        rejected: list[Rejected] = []
        for raw in response.get("Items", []):
            try:
                items.append(_item_from_dynamodb(raw))
            except InvalidItem as exc:
                rejected.append(Rejected(_ref(raw), exc.reason))
        last = response.get("LastEvaluatedKey")
        return Page(items, {"last_evaluated_key": last} if last else None, rejected)


def _ref(raw: Mapping[str, Any]) -> str:
    tenant = raw.get("tenant_id", {}).get("S", "?")
    employee = raw.get("employee_id", {}).get("S", "?")
    return f"{tenant}/{employee}"


def _item_from_dynamodb(raw: Mapping[str, Any]) -> BillableItem:
    amount_attr = raw.get("amount", {})
    if "N" not in amount_attr:
        raise InvalidItem("amount", amount_attr, "must be a number (N) of minor units")
    text = amount_attr["N"]
    try:
        amount: object = int(text)
    except ValueError:
        amount = text  # "12.5" and friends: BillableItem.parse names it
    return BillableItem.parse(
        raw.get("tenant_id", {}).get("S"),
        raw.get("employee_id", {}).get("S"),
        amount,
        raw.get("currency", {}).get("S"),
    )


class S3ManifestSource:
    """A JSONL manifest ``s3://bucket/<key template with {month}>``, one item per line
    (``{"tenant_id", "employee_id", "amount", "currency"[, "active"]}``).

    Segment i owns the lines that START in bytes [i*size/N, (i+1)*size/N); pages are ranged
    GETs of ``chunk_bytes``; the cursor is the byte offset of the next line.
    """

    def __init__(
        self, client: Any, bucket: str, key_template: str, chunk_bytes: int = 1 << 20
    ) -> None:
        self._client = client
        self._bucket = bucket
        self._template = key_template
        self._chunk = chunk_bytes
        self._sizes: dict[str, int] = {}
        self._etags: dict[str, str] = {}
        self._pins: dict[str, str] = {}

    def _key(self, month: str) -> str:
        return self._template.format(month=month)

    def _head(self, key: str) -> None:
        try:
            head = self._client.head_object(Bucket=self._bucket, Key=key)
        except self._client.exceptions.ClientError as exc:
            raise SourceError(f"manifest s3://{self._bucket}/{key} cannot be read: {exc}") from exc
        self._sizes[key] = int(head["ContentLength"])
        self._etags[key] = str(head["ETag"])

    def version(self, month: str) -> str:
        """The manifest's current ETag: pinned in the run record when a generation starts."""
        key = self._key(month)
        if key not in self._etags:
            self._head(key)
        return self._etags[key]

    def pin(self, month: str, version: str) -> None:
        """Read only this version of the month's manifest (the run record's pin); any other
        version fails the read with SourceChanged."""
        key = self._key(month)
        self._pins[key] = version
        if key in self._etags and self._etags[key] != version:
            self._changed(key, version)

    def _changed(self, key: str, version: str) -> None:
        raise SourceChanged(
            f"manifest s3://{self._bucket}/{key} was replaced during the run (the run record "
            f"pins ETag {version}): its byte-offset checkpoints no longer apply; re-run the "
            "month with restart=true to dispatch the new manifest from the start"
        )

    def _size(self, key: str) -> int:
        if key not in self._sizes:
            self._head(key)
            pinned = self._pins.get(key)
            if pinned is not None and self._etags[key] != pinned:
                self._changed(key, pinned)
        return self._sizes[key]

    def _get(self, key: str, start: int, end: int) -> bytes:
        """Bytes [start, end] (inclusive, as HTTP ranges are) of the pinned version."""
        kwargs: dict[str, Any] = {
            "Bucket": self._bucket,
            "Key": key,
            "Range": f"bytes={start}-{end}",
        }
        pinned = self._pins.get(key)
        if pinned is not None:
            kwargs["IfMatch"] = pinned  # S3 answers 412 PreconditionFailed for another ETag
        try:
            body = self._client.get_object(**kwargs)
        except self._client.exceptions.ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if pinned is not None and code in ("PreconditionFailed", "412"):
                self._changed(key, pinned)
            raise
        data: bytes = body["Body"].read()
        return data

    def _first_line_start(self, key: str, boundary: int, size: int) -> int:
        """Offset of the first line starting at or after ``boundary``."""
        if boundary == 0:
            return 0
        pos = boundary - 1  # if the byte before the boundary is '\n', a line starts here
        while pos < size:
            data = self._get(key, pos, min(pos + self._chunk, size) - 1)
            newline = data.find(b"\n")
            if newline >= 0:
                return pos + newline + 1
            pos += len(data)
        return size

    def read_page(
        self, month: str, segment: int, total_segments: int, cursor: Cursor | None
    ) -> Page:
        key = self._key(month)
        size = self._size(key)
        seg_end = size * (segment + 1) // total_segments
        if cursor is None:
            offset = self._first_line_start(key, size * segment // total_segments, size)
        else:
            offset = int(cursor["offset"])
        if offset >= seg_end or offset >= size:
            return Page([], None)
        data = self._get(key, offset, min(offset + self._chunk, size) - 1)
        # At least one whole line per page, even if a line is longer than a chunk.
        while b"\n" not in data and offset + len(data) < size:
            data += self._get(
                key, offset + len(data), min(offset + len(data) + self._chunk, size) - 1
            )
        items: list[BillableItem] = []
        rejected: list[Rejected] = []
        pos = 0
        while pos < len(data) and offset + pos < seg_end:
            newline = data.find(b"\n", pos)
            if newline < 0:
                if offset + len(data) < size:
                    break  # incomplete line at the end of the chunk: next page starts here
                newline = len(data)
            line = data[pos:newline].strip()
            line_offset = offset + pos
            pos = newline + 1
            if not line:
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise SourceError(
                    f"manifest s3://{self._bucket}/{key} byte {line_offset}: not JSON ({exc})"
                ) from exc
            if not isinstance(record, dict):
                raise SourceError(
                    f"manifest s3://{self._bucket}/{key} byte {line_offset}: not a JSON object"
                )
            if record.get("active", True) is not True:
                continue
            try:
                items.append(
                    BillableItem.parse(
                        record.get("tenant_id"),
                        record.get("employee_id"),
                        record.get("amount"),
                        record.get("currency"),
                    )
                )
            except InvalidItem as exc:
                rejected.append(Rejected(f"byte {line_offset}", exc.reason))
        next_offset = offset + min(pos, len(data))
        done = next_offset >= seg_end or next_offset >= size
        return Page(items, None if done else {"offset": next_offset}, rejected)
