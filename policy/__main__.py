"""The policy pack the Pulumi CLI runs: `pulumi preview --policy-pack policy`.

The CLI creates `venv/` in this directory, installs requirements.txt into it (pulumi-policy and
the idempotent-messaging package WITHOUT its extras: the rules import neither pulumi-aws, boto3
nor Powertools) and runs ``python <this directory>``. The rules come from the installed package,
so this directory works when copied into any project, whatever its language.

Nothing else lives here: constructing `PolicyPack` starts its gRPC server and never returns, so
the rules live in importable modules (`idempotent_messaging.rules`) that tests and the offline
check import.
"""

from pulumi_policy import EnforcementLevel, PolicyPack

from idempotent_messaging.rules.pack import PACK_DESCRIPTION, PACK_NAME, POLICIES

PolicyPack(
    name=PACK_NAME,
    policies=POLICIES,
    enforcement_level=EnforcementLevel.ADVISORY,
    description=PACK_DESCRIPTION,
)
