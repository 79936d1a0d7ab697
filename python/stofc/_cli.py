"""The `stofc` and `stof-run` commands a pip install puts on PATH: the bundled tools."""
import os
import sys

from ._compile import stof_run_path, stofc_path
from ._errors import Error


def _exec(path_fn, name):
    try:
        path = str(path_fn())
    except Error as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        sys.exit(1)
    os.execv(path, [path] + sys.argv[1:])


def stofc():
    _exec(stofc_path, "stofc")


def stof_run():
    _exec(stof_run_path, "stof-run")
