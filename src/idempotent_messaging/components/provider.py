"""The components as a Pulumi component package, for programs in any Pulumi language.

``pulumi package add`` on the plugin directory (``components/PulumiPlugin.yaml``) runs ``main``:
the Python SDK's component provider host (``pulumi.provider.experimental``) infers the package
schema from the components' type annotations and constructs a component when a TypeScript,
Go, C#, Java or YAML program declares one (docs/component-package.md).

The SDK's analyzer reads two things from the annotations only, so the provider completes
them from the dataclasses the args are: a field with a default is an OPTIONAL input (the
analyzer makes every non-``Optional`` annotation required), and an inherited field
(``FunctionArgs``) keeps the docstring of the class that declares it (the analyzer reads
docstrings from the source of the args class alone). Descriptions lose their source
indentation.
"""

import dataclasses
import inspect
import json
import sys
from typing import Any

import pulumi
from pulumi.provider import main as serve
from pulumi.provider.experimental.analyzer import (
    Analyzer,
    ComponentDefinition,
    PropertyDefinition,
    TypeDefinition,
)
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.experimental.schema import generate_schema

from .consumer import IdempotentQueueConsumer
from .monthly_fanout import MonthlyFanout

PACKAGE_NAME = "idempotent-messaging"
"""The package (and type token prefix) other languages see: ``idempotent-messaging:index:*``."""
COMPONENTS: list[type[pulumi.ComponentResource]] = [IdempotentQueueConsumer, MonthlyFanout]


def args_type_of(component: type) -> type:
    """The args dataclass of a component (the ``args`` annotation of its ``__init__``)."""
    return inspect.get_annotations(component.__init__)["args"]  # type: ignore[misc]


def _complete(
    properties: dict[str, PropertyDefinition],
    mapping: dict[str, str],
    typ: type,
    analyzer: Analyzer,
) -> None:
    """Optional flags from dataclass defaults; descriptions from the declaring class."""
    defaults = (
        {
            f.name
            for f in dataclasses.fields(typ)
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        }
        if dataclasses.is_dataclass(typ)
        else set()
    )
    for schema_name, prop in properties.items():
        python_name = mapping[schema_name]
        if python_name in defaults:
            prop.optional = True
        if not prop.description:
            for cls in typ.__mro__:
                if python_name in inspect.get_annotations(cls):
                    prop.description = analyzer.get_docstring(cls, python_name)
                    break
        if prop.description:
            prop.description = inspect.cleandoc(prop.description)


def complete_definitions(
    analyzer: Analyzer,
    components: dict[str, ComponentDefinition],
    types: dict[str, TypeDefinition],
) -> None:
    """Apply ``_complete`` to every component's inputs and outputs and every named type."""
    by_name = {component.__name__: component for component in COMPONENTS}
    for name, definition in components.items():
        component = by_name[name]
        _complete(definition.inputs, definition.inputs_mapping, args_type_of(component), analyzer)
        _complete(definition.outputs, definition.outputs_mapping, component, analyzer)
    for type_definition in types.values():
        _complete(
            type_definition.properties,
            type_definition.properties_mapping,
            type_definition.python_type,
            analyzer,
        )


class IdempotentMessagingProvider(ComponentProvider):
    """The SDK's ComponentProvider over both components, with the completed schema."""

    def __init__(self, version: str) -> None:
        super().__init__(COMPONENTS, PACKAGE_NAME, None, version)
        # The SDK keeps the analysis it constructs from; completing it in place makes
        # `construct` (required inputs) and the served schema agree.
        complete_definitions(self.analyzer, self._component_defs, self._type_defs)
        self.schema = json.dumps(
            generate_schema(
                PACKAGE_NAME,
                version,
                None,
                self._component_defs,
                self._type_defs,
                self._dependencies,
            ).to_json()
        )

    def schema_json(self) -> dict[str, Any]:
        """The package schema as the engine receives it (GetSchema)."""
        return json.loads(self.schema or "{}")


def main(version: str, args: list[str] | None = None) -> None:
    """Serve the provider: what the plugin's ``__main__.py`` runs (the engine passes its
    address as the argument)."""
    serve(IdempotentMessagingProvider(version), sys.argv[1:] if args is None else args)
