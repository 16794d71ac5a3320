"""The public Powertools for AWS Lambda (Python) v3 layer for a region/architecture/runtime.

Powertools publishes one layer per Python version and architecture, in account 017000801446
(498634801083 in the China partition), with the same version number in every region:
``arn:aws:lambda:{region}:017000801446:layer:AWSLambdaPowertoolsPythonV3-{python312}-{arm64}:{v}``.
"""

from __future__ import annotations

import re

import pulumi

SUPPORTED_ARCHITECTURES = ("arm64", "x86_64")
# Lambda runtime -> the token Powertools uses in its v3 layer names. Older runtimes have no
# v3 layer; add newer ones here once Powertools publishes them.
SUPPORTED_RUNTIMES = {"python3.12": "python312", "python3.13": "python313"}
POWERTOOLS_ACCOUNTS = {"aws": "017000801446", "aws-cn": "498634801083"}

_REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_ARN_RE = re.compile(r"^arn:(?P<partition>aws[a-z-]*):[a-z0-9-]+:(?P<region>[a-z0-9-]*):")


def powertools_layer_arn(
    region: str, architecture: str, runtime: str, version: int, partition: str = "aws"
) -> str:
    """ARN of the public Powertools v3 layer; ValueError for combinations AWS does not publish."""
    if not _REGION_RE.match(region):
        raise ValueError(f"region={region!r}: not an AWS region name")
    if architecture not in SUPPORTED_ARCHITECTURES:
        raise ValueError(f"architecture={architecture!r}: must be one of {SUPPORTED_ARCHITECTURES}")
    if runtime not in SUPPORTED_RUNTIMES:
        raise ValueError(f"runtime={runtime!r}: must be one of {sorted(SUPPORTED_RUNTIMES)}")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"version={version!r}: must be a positive layer version number")
    account = POWERTOOLS_ACCOUNTS.get(partition)
    if account is None:
        raise ValueError(
            f"partition={partition!r}: Powertools publishes public layers only in "
            f"{sorted(POWERTOOLS_ACCOUNTS)}"
        )
    py = SUPPORTED_RUNTIMES[runtime]
    return (
        f"arn:{partition}:lambda:{region}:{account}:layer:"
        f"AWSLambdaPowertoolsPythonV3-{py}-{architecture}:{version}"
    )


def partition_of_region(region: str) -> str:
    """AWS partition of a region name (cn-* -> aws-cn, us-gov-* -> aws-us-gov)."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def region_and_partition_of(arn: str) -> tuple[str, str]:
    """(region, partition) of a regional ARN, e.g. a queue's: the layer must match its region."""
    match = _ARN_RE.match(arn)
    if match is None or not match.group("region"):
        raise ValueError(f"arn={arn!r}: not a regional ARN")
    return match.group("region"), match.group("partition")


def deployment_layer_arn(
    *,
    architecture: str,
    runtime: str,
    version: int,
    regional_arn: pulumi.Output[str],
    opts: pulumi.ResourceOptions | None,
) -> pulumi.Input[str]:
    """The Powertools layer for the region a component's functions deploy to.

    With the default provider that is the stack's ``aws:region``, known at preview, so the
    layer shows up in ``pulumi preview``. With an explicit provider (``opts.provider`` or
    ``opts.providers``) the stack's region may be wrong, so it is read from ``regional_arn``,
    the ARN of a resource the component creates in that region (known after create).
    """
    region = pulumi.Config("aws").get("region")
    explicit_provider = opts is not None and (opts.provider or opts.providers)
    if region and not explicit_provider:
        return powertools_layer_arn(
            region, architecture, runtime, version, partition_of_region(region)
        )

    def from_arn(arn: str) -> str:
        arn_region, partition = region_and_partition_of(arn)
        return powertools_layer_arn(arn_region, architecture, runtime, version, partition)

    return regional_arn.apply(from_arn)
