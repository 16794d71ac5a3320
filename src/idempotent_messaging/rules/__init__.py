"""The policy pack's rules, one concern per module; each rule declares its own metadata.

    pack      every rule collected as pulumi-policy policies (what `policy/__main__.py` serves)
    graph     the stack as linked nodes (queue -> DLQ, mapping -> function, alarms, policies)
    values    plain values and unknowns as pulumi-policy hands them over

Imports only pulumi-policy, the standard library and `idempotent_messaging.limits`: the pack
runs on any team's stack with nothing else installed.
"""
