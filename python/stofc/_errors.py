"""The one error type of the package."""


class Error(RuntimeError):
    """A failure reported by stofc or its runtime, with its one-line message.

    status: the C API's stof_status for runtime errors (1 invalid argument, 2 out of memory,
    3 CUDA, 4 no device, 5 plan file, 6 internal), None for compile errors; returncode: the
    exit status of the stofc tool for compile errors, else None."""

    def __init__(self, message, status=None, returncode=None):
        super().__init__(message)
        self.status = status
        self.returncode = returncode
