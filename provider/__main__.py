"""Plugin entry: the Python language host runs this directory (``python <dir> <engine>``)."""

import sys
import tomllib
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
# The components live beside this directory in the repository, which is not an installed
# package: its root is where Python finds them.
sys.path.insert(0, str(REPOSITORY))

from idempotent_messaging.components.provider import main  # noqa: E402

main(tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]["version"])
