"""The offline policy engine: plays the Pulumi engine's part so the pack runs without the CLI.

    project   Pulumi.yaml / Pulumi.<stack>.yaml / the program's own virtualenv
    typed     plausible values typed by the provider SDK's classes (outputs, invoke results)
    answers   a user's pinned data-source results
    mocks     AwsMocks: what AWS would answer, regional and typed
    recorder  RecordingMonitor: every registration with the wire data an analyzer receives
    runner    run_program / run_function: a program run in-process, isolated
    analyzer  pulumi-policy's own analyzer servicer driven in-process; rules fail closed
    report    text / JSON / SARIF
    cli       `python -m idempotent_messaging.policy.check`

The pack's rule modules never import this package (an import-linter contract says so): the
engine depends on the pack, never the reverse. The infra tests and the emulator deploy use the
same recorder and runner.
"""
