"""A generated-SDK-shaped package for a multi-language component provider."""

from . import ec2

__all__ = ["ec2"]
