"""Entry point the Pulumi CLI runs: build the pack (this starts its gRPC server and blocks).

Nothing else lives here: rules are in importable modules (see pack.py), because constructing
`PolicyPack` never returns.

The CLI runs this file as ``python <pack directory>``, so this module is no package member and
the pack's modules (which import each other relatively) are loaded as a package made from this
directory itself: the pack works from an installed wheel, a checkout or a plain copy, with only
the requirements.txt beside it installed.
"""

import importlib
import importlib.util
import sys
from pathlib import Path

from pulumi_policy import EnforcementLevel, PolicyPack

PACKAGE = "idempotent_messaging_policy_pack"
"""Import name of this directory while the pack runs (distinct from any installed copy)."""

_directory = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    PACKAGE, _directory / "__init__.py", submodule_search_locations=[str(_directory)]
)
assert _spec is not None and _spec.loader is not None
sys.modules[PACKAGE] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sys.modules[PACKAGE])
pack = importlib.import_module(f"{PACKAGE}.pack")

PolicyPack(
    name=pack.PACK_NAME,
    policies=pack.POLICIES,
    enforcement_level=EnforcementLevel.ADVISORY,
    description=pack.PACK_DESCRIPTION,
)
