"""Both components are laid out alike: args module, validation module, constructor module,
and the function arguments they share are defined once (function_args.FunctionArgs)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from idempotent_messaging.components import (
    IdempotentQueueConsumer,
    IdempotentQueueConsumerArgs,
    MonthlyFanout,
    MonthlyFanoutArgs,
    consumer_args,
    consumer_validation,
    fanout_args,
    fanout_validation,
    function_args,
)
from idempotent_messaging.components.function_args import FunctionArgs

pytestmark = pytest.mark.infra

SHARED = {f.name for f in dataclasses.fields(FunctionArgs)}


def documented_fields(module: object, class_name: str) -> dict[str, str]:
    """Field -> docstring of a dataclass, read from its source (attribute docstrings)."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text())  # type: ignore[arg-type]
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    docs: dict[str, str] = {}
    for node, following in zip(cls.body, [*cls.body[1:], None], strict=True):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
        ):
            docs[node.target.id] = str(following.value.value)
    return docs


def test_both_args_take_the_shared_function_arguments_from_one_place() -> None:
    assert {"architecture", "runtime", "log_level", "log_retention_days", "tracing"} <= SHARED
    for args_type, module, name in (
        (IdempotentQueueConsumerArgs, consumer_args, "IdempotentQueueConsumerArgs"),
        (MonthlyFanoutArgs, fanout_args, "MonthlyFanoutArgs"),
    ):
        assert issubclass(args_type, FunctionArgs)
        tree = ast.parse(Path(inspect.getfile(module)).read_text())
        (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
        redefined = {
            n.target.id
            for n in cls.body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
        } & SHARED
        assert redefined == set(), f"{name} redefines shared function arguments {redefined}"


def test_every_shared_function_argument_states_its_default_and_reason() -> None:
    docs = documented_fields(function_args, "FunctionArgs")
    assert set(docs) == SHARED
    for name, doc in docs.items():
        assert doc.startswith("Default"), name


def test_each_component_has_its_args_validation_and_constructor_modules() -> None:
    assert IdempotentQueueConsumerArgs.__module__ == consumer_args.__name__
    assert MonthlyFanoutArgs.__module__ == fanout_args.__name__
    assert callable(consumer_validation.validate_consumer_args)
    assert callable(fanout_validation.validate_fanout_args)
    assert IdempotentQueueConsumer.__module__ == "idempotent_messaging.components.consumer"
    assert MonthlyFanout.__module__ == "idempotent_messaging.components.monthly_fanout"
    # the constructor modules define no dataclass and no validate_* of their own
    for module_name in (
        "idempotent_messaging.components.consumer",
        "idempotent_messaging.components.monthly_fanout",
    ):
        module = __import__(module_name, fromlist=["_"])
        source = Path(inspect.getfile(module)).read_text()
        assert "@dataclass" not in source, module_name
        assert "def validate_" not in source, module_name
