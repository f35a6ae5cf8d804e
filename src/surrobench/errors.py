"""The one exception type for errors a user can cause.

The CLI catches :class:`UsageError` at its edge and prints its message as one line with exit code 2
(DESIGN.md, "Exit codes"). Anything else that escapes is a bug and keeps its traceback.
"""


class UsageError(Exception):
    """Bad input or usage: a malformed spec, an unknown model, an unreadable file.

    The message must say what was wrong, where, and how to fix it, on one line.
    """
