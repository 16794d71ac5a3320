"""Plugin entry: the Python language host runs this directory (``python <dir> <engine>``).

The components come from the installed ``idempotent-messaging`` package (requirements.txt
installs it into this directory's venv), never from a checkout's path.
"""

from idempotent_messaging import __version__
from idempotent_messaging.components.provider import main

main(__version__)
