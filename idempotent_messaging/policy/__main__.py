"""Entry point the Pulumi CLI runs: build the pack (this starts its gRPC server and blocks).

Nothing else lives here: rules are in importable modules (see policy/pack.py), because
constructing `PolicyPack` never returns.
"""

import sys
from pathlib import Path

# The CLI runs this file with the pack directory as sys.path[0]; the rules import each other as
# `policy.*` (the components import `policy.limits` the same way), so the pack's parent
# directory must be importable too.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack

from idempotent_messaging.policy.pack import PACK_DESCRIPTION, PACK_NAME, POLICIES

PolicyPack(
    name=PACK_NAME,
    policies=POLICIES,
    enforcement_level=EnforcementLevel.ADVISORY,
    description=PACK_DESCRIPTION,
)
