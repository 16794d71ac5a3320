"""`python -m policy.check`: the offline policy check's entry point (``policy.offline.cli``)."""

from idempotent_messaging.policy.offline.cli import check, check_report, main, repo_root, run
from idempotent_messaging.policy.offline.report import to_json, to_sarif, to_text

__all__ = ["check", "check_report", "main", "repo_root", "run", "to_json", "to_sarif", "to_text"]

if __name__ == "__main__":
    run()
