"""`python -m idempotent_messaging.policy.check` (or `idempotent-messaging-check`): the
offline policy check's entry point (``offline.cli``)."""

from .offline.cli import check, check_report, main, repo_root, run
from .offline.report import to_json, to_sarif, to_text

__all__ = ["check", "check_report", "main", "repo_root", "run", "to_json", "to_sarif", "to_text"]

if __name__ == "__main__":
    run()
