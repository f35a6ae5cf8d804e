"""The one exception type for errors a user can cause.

The CLI catches :class:`UsageError` at its edge and prints its message as one line with exit code 2
(docs/design.md, "Interfaces"). Anything else that escapes is a bug and keeps its traceback.
"""


class Interrupted(Exception):
    """The user interrupted a command (Ctrl-C) after some of its work was kept; the message says what was
    kept (``interrupted: 3 of 8 configs stored as run R``). The CLI prints it and exits
    :data:`EXIT_INTERRUPTED`. Not a ``KeyboardInterrupt``: click would turn that into its own abort and
    lose the message."""


class UsageError(Exception):
    """Bad input or usage: a malformed spec, an unknown model, an unreadable file.

    The message must say what was wrong, where, and how to fix it, on one line.
    """


# Exit codes of the command line, one home (the README's table lists them).
EXIT_OK = 0
#: ``compare --fail-on-regression`` found a regression.
EXIT_REGRESSION = 1
#: bad input or usage (:class:`UsageError`, click's own usage errors), an unwritable output.
EXIT_USAGE = 2
#: the sweep finished and was stored, but at least one config ended ``oom`` or ``error``.
EXIT_CONFIGS_FAILED = 3
#: interrupted (Ctrl-C, SIGINT): 128 + signal 2, the shell convention; SIGTERM (143) and SIGHUP (129) are
#: handled as Ctrl-C and exit 128 + their own number (:mod:`surrobench.cli.signals`).
EXIT_INTERRUPTED = 130
