"""The handler's function NAME is bound at module level in the user's code, checked before any
resource exists by reading the module with ``ast`` (never importing it), for consumers and
fan-outs alike."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pulumi
import pytest

from idempotent_messaging.components.handler_binding import (
    check_handler_binding,
    find_binding,
    module_level_names,
)

from .conftest import PulumiHarness, consumer_args, reference_code

pytestmark = pytest.mark.infra


def names(source: str) -> set[str]:
    return module_level_names(ast.parse(source))[0]


@pytest.mark.parametrize(
    "source",
    [
        "def handler(event, context):\n    return {}\n",
        "async def handler(event, context):\n    return {}\n",
        "class handler:\n    pass\n",
        "from idempotent_messaging.runtime import lambda_handler\nhandler = lambda_handler(X)\n",
        "handler: object = object()\n",
        "handler, other = 1, 2\n",
        "first, *handler = [1, 2]\n",
        "from app.entry import handler\n",
        "from .entry import main as handler\n",
        "import handler\n",
        "import os.path as handler\n",
        "if True:\n    handler = 1\nelse:\n    pass\n",
        "try:\n    from fast import handler\nexcept ImportError:\n    from slow import handler\n",
        "with open('x') as handler:\n    pass\n",
        "for handler in range(1):\n    pass\n",
        "print(handler := 1)\n",
    ],
    ids=[
        "def", "async-def", "class", "assignment", "annotated", "unpacking", "starred",
        "from-import", "relative-import-as", "import", "import-as", "inside-if", "inside-try",
        "with-as", "for-target", "walrus",
    ],
)  # fmt: skip
def test_every_module_level_binding_counts(source: str) -> None:
    assert "handler" in names(source)


@pytest.mark.parametrize(
    "source",
    [
        "def main(event, context):\n    return {}\n",
        "def outer():\n    handler = 1\n",
        "class App:\n    handler = staticmethod(print)\n",
        "handler: object\n",  # an annotation alone binds nothing
        "app.handler = print\n",
        "import handlers.orders\n",  # binds `handlers`, not `handler`
    ],
    ids=["other-name", "inside-def", "class-attribute", "bare-annotation", "attribute", "package"],
)
def test_names_bound_elsewhere_do_not_count(source: str) -> None:
    assert "handler" not in names(source)


def test_a_star_import_or_a_module_getattr_makes_it_unknown_not_missing() -> None:
    files = {
        "star.py": pulumi.StringAsset("from app.entry import *\n"),
        "lazy.py": pulumi.StringAsset("def __getattr__(name):\n    return print\n"),
    }
    star = find_binding("star.handler", files)
    lazy = find_binding("lazy.handler", files)
    assert star is not None and star.bound is None and "star-imports from app.entry" in star.why
    assert lazy is not None and lazy.bound is None and "__getattr__" in lazy.why


def test_a_package_module_is_read_from_its_init(tmp_path: Path) -> None:
    (tmp_path / "billing").mkdir()
    init = tmp_path / "billing" / "__init__.py"
    init.write_text("from .invoices import handler\n")
    binding = find_binding("billing.handler", {"billing/__init__.py": pulumi.FileAsset(str(init))})
    assert binding is not None and binding.bound is True


def test_a_remote_or_absent_module_is_not_judged() -> None:
    remote = {"app.py": pulumi.RemoteAsset("https://example.com/app.py")}
    assert find_binding("app.handler", remote) is None
    assert find_binding("app.handler", {}) is None


def test_a_miss_names_the_field_the_value_and_the_file(tmp_path: Path) -> None:
    module = tmp_path / "app.py"
    module.write_text("def handle(event, context):\n    return {}\n")
    with pytest.raises(ValueError) as raised:
        check_handler_binding("app.handler", {"app.py": pulumi.FileAsset(str(module))})
    message = str(raised.value)
    assert message.startswith("handler='app.handler': ")
    assert str(module) in message
    assert "binds no 'handler' at module level" in message


def test_a_syntax_error_is_a_miss_with_its_line(tmp_path: Path) -> None:
    module = tmp_path / "app.py"
    module.write_text("def handler(event, context)\n    return {}\n")
    with pytest.raises(
        ValueError, match=r"handler='app.handler': .*app.py: it is not valid Python"
    ):
        check_handler_binding("app.handler", {"app.py": pulumi.FileAsset(str(module))})


def test_a_star_import_warns_instead_of_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: warned.append(message))
    check_handler_binding("app.handler", {"app.py": pulumi.StringAsset("from x import *\n")})
    assert len(warned) == 1 and "cannot tell from app.py whether it binds 'handler'" in warned[0]


# --- In the components, before any resource ------------------------------------------------


def _errors_of(harness: PulumiHarness, build: Any) -> tuple[list[ValueError], Any]:
    errors: list[ValueError] = []

    def program() -> None:
        try:
            build()
        except ValueError as error:
            errors.append(error)

    return errors, harness.run(program)


def test_a_consumer_whose_module_lacks_the_function_is_refused_before_any_resource(
    pulumi_harness: PulumiHarness, tmp_path: Path
) -> None:
    from idempotent_messaging.components import IdempotentQueueConsumer

    (tmp_path / "payments").mkdir()
    (tmp_path / "payments" / "__init__.py").write_text("")
    (tmp_path / "payments" / "consumer.py").write_text("def handle(event, context):\n    pass\n")
    errors, run = _errors_of(
        pulumi_harness,
        lambda: IdempotentQueueConsumer(
            "payments",
            consumer_args(handler="payments.consumer.handler", code_path=str(tmp_path)),
        ),
    )
    assert len(errors) == 1
    assert re.match(r"handler='payments.consumer.handler': .*payments/consumer.py", str(errors[0]))
    assert run.registered == []


def test_a_fanout_names_its_consumer_handler_field(
    pulumi_harness: PulumiHarness, tmp_path: Path
) -> None:
    from idempotent_messaging.components import MonthlyFanout, MonthlyFanoutArgs

    (tmp_path / "charges.py").write_text("from idempotent_messaging.runtime import Consumer\n")
    errors, run = _errors_of(
        pulumi_harness,
        lambda: MonthlyFanout(
            "monthly",
            MonthlyFanoutArgs(
                schedule_expression_timezone="UTC",
                consumer_handler="charges.handler",
                consumer_code_path=str(tmp_path),
            ),
        ),
    )
    assert len(errors) == 1
    assert str(errors[0]).startswith("consumer_handler='charges.handler': ")
    assert "charges.py binds no 'handler'" in str(errors[0])
    assert run.registered == []


def test_the_reference_handlers_are_bound() -> None:
    """handlers.orders assigns `handler = lambda_handler(...)`, handlers.charges defines it."""
    from idempotent_messaging.components.bundle import archive_assets

    files = archive_assets(reference_code())
    for handler in ("handlers.orders.handler", "handlers.charges.handler"):
        binding = find_binding(handler, files)
        assert binding is not None and binding.bound is True, handler
