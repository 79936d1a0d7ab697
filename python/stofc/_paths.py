"""Where the bundled binaries are: <package>/bin/stofc, <package>/bin/stof-run and
<package>/lib/libstof.so, as `pip install .` puts them. STOFC_HOME=DIR (a build or
install tree with bin/ and lib/) takes precedence."""
import os
from pathlib import Path

from ._errors import Error

_PACKAGE = Path(__file__).resolve().parent


def home():
    env = os.environ.get("STOFC_HOME")
    return Path(env) if env else _PACKAGE


def find(relative):
    path = home() / relative
    if not path.exists():
        hint = "STOFC_HOME" if os.environ.get("STOFC_HOME") else "the package"
        raise Error(f"{path} is missing from {hint}: install stofc with `pip install .` from the stofc checkout, "
                    "or set STOFC_HOME to a stofc build or install directory")
    return path
