"""Pinned data-source answers: the values a user wants an offline check to see.

Offline, a data source that looks something up in the cloud cannot be answered: what only the
cloud knows is unknown (``offline.unknowns``), as a value the engine cannot know yet is in a
preview, and the rules that need it stay undecided. Where a rule's verdict depends on the real
value (an SSM parameter holding a visibility timeout, the key an alias targets), pin it in a
YAML file, passed with
``--answers FILE`` or found beside the program as ``offline-answers.yaml``::

    invokes:
      - function: aws.ssm.get_parameter          # Python name or the token
        args: {name: /orders/batch-size}         # optional: only calls with these arguments
        result: {value: "10"}                    # wire (camelCase) or Python names

The first entry whose function and arguments match wins; its ``result`` fields are known
(typed as the result class declares them, e.g. ``value: 10`` becomes ``"10"``) and judged by
the pack; the fields it does not pin stay unknown (``offline.unknowns``).

Another stack's outputs (``pulumi.StackReference``) are unknown offline in ``up`` as in a
preview: they are that stack's values, not this one's to judge. Pin the ones a rule needs::

    stack_references:
      acme/shared/prod:                          # the referenced stack's name
        visibilityTimeout: 60                    # output name: value
        queueArn: arn:aws:sqs:eu-west-1:123456789012:shared

An output the file does not pin stays unknown.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import OfflineCheckError

ANSWERS_FILE_NAME = "offline-answers.yaml"


class AnswersError(OfflineCheckError):
    """The answers file is malformed; the message names the entry and the problem."""


def to_token(function: str) -> str:
    """`aws.ssm.get_parameter` / `aws.get_caller_identity` -> the invoke token."""
    if function.count(":") == 2:
        return function
    parts = function.split(".")
    if len(parts) < 2:
        raise AnswersError(f"function {function!r} is neither a token nor `pkg.module.get_x`")
    provider, name = parts[0], parts[-1]
    module = "/".join(parts[1:-1]) or "index"
    camel = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)
    return f"{provider}:{module}/{camel}:{camel}"


@dataclass(frozen=True)
class Answer:
    token: str
    args: dict[str, Any]
    result: dict[str, Any]


@dataclass
class Answers:
    entries: list[Answer] = field(default_factory=list)
    source: str | None = None
    # Referenced stack name -> its pinned outputs (`stack_references:`).
    stacks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def stack_outputs(self, stack: str) -> dict[str, Any] | None:
        """The pinned outputs of another stack, None when the file pins none of them."""
        return self.stacks.get(stack)

    def answered(self, token: str, given: dict[str, Any]) -> dict[str, Any] | None:
        """The pinned result fields of the first entry matching this call, else None."""
        for entry in self.entries:
            if entry.token == token and all(
                given.get(_camel(k)) == v for k, v in entry.args.items()
            ):
                return {_camel(k): v for k, v in entry.result.items()}
        return None

    def apply(self, token: str, given: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        answered = self.answered(token, given)
        return result if answered is None else {**result, **answered}


def _camel(name: str) -> str:
    """`with_decryption` -> `withDecryption` (the wire name); wire names pass unchanged."""
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)


def load_answers(path: str | os.PathLike[str]) -> Answers:
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except OSError as exc:
        raise AnswersError(f"cannot read answers file {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise AnswersError(f"answers file {path} is not valid YAML: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("invokes", []), list):
        raise AnswersError(f"answers file {path}: expected a mapping with an `invokes:` list")
    unknown_keys = sorted(set(doc) - {"invokes", "stack_references"})
    if unknown_keys:
        raise AnswersError(
            f"answers file {path}: unknown key(s) {unknown_keys}; it takes `invokes:` and "
            f"`stack_references:`"
        )
    stacks = doc.get("stack_references") or {}
    if not isinstance(stacks, dict) or not all(
        isinstance(k, str) and isinstance(v, dict) for k, v in stacks.items()
    ):
        raise AnswersError(
            f"answers file {path}: `stack_references` must map stack names to mappings of "
            f"output names to values"
        )
    entries: list[Answer] = []
    for index, raw in enumerate(doc.get("invokes") or []):
        where = f"answers file {path}: invokes[{index}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("function"), str):
            raise AnswersError(f"{where}: needs a `function:` (e.g. aws.ssm.get_parameter)")
        args, result = raw.get("args") or {}, raw.get("result")
        if not isinstance(args, dict):
            raise AnswersError(f"{where}: `args` must be a mapping of argument names to values")
        if not isinstance(result, dict):
            raise AnswersError(f"{where}: `result` must be a mapping of result fields to values")
        entries.append(Answer(to_token(raw["function"]), args, result))
    return Answers(entries, str(path), {k: dict(v) for k, v in stacks.items()})
