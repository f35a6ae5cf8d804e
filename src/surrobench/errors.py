"""The one exception type for errors a user can cause, and its one kind for a user's model that failed.

The CLI catches :class:`UsageError` at its edge and prints its message as one line with exit code 2
(docs/design.md, "Interfaces"). Anything else that escapes is a bug and keeps its traceback. A
:class:`ModelError` is a UsageError where it stops a command, but a sweep records it as the failure of its
configs (exit code 3) under its own label.
"""

from collections.abc import Callable


class Interrupted(Exception):
    """The user interrupted a verb (Ctrl-C, SIGTERM, SIGHUP) after some of its work was kept: ``partial`` is the
    record of what was kept (stored, marked ``interrupted``), the record the verb would have returned; the
    message says what it holds (``interrupted: 3 of 8 configs stored as run R``). The CLI writes
    ``partial.to_json()`` to the command's ``--json`` and exits :data:`EXIT_INTERRUPTED`, in one place
    (:func:`surrobench.cli.options.checked_command`). Not a ``KeyboardInterrupt``: click would turn that into its
    own abort and lose the message."""

    def __init__(self, message: str, partial=None) -> None:
        super().__init__(message)
        self.partial = partial


class UsageError(Exception):
    """Bad input or usage: a malformed spec, an unknown model, an unreadable file.

    The message must say what was wrong, where, and how to fix it, on one line. A bad value of one library
    parameter is made with :meth:`bad`: ``parameter`` names it as the library does (``budget_s``) and ``detail``
    says the rest, so the CLI can name its flag in the parameter's place (``--budget-s``,
    :func:`surrobench.cli.options.usage_line`) without reading the message. Other parameters the detail names
    (``find_max needs p99_ms``) are its ``{p99_ms}`` fields, listed in ``others``, and named the same way.
    """

    def __init__(
        self,
        message: str,
        *,
        parameter: str | None = None,
        detail: str | None = None,
        others: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.parameter = parameter
        self.detail = detail
        self.others = others

    @classmethod
    def bad(cls, parameter: str, detail: str, *, others: tuple[str, ...] = ()) -> "UsageError":
        """The error of a bad ``parameter`` value, its message :meth:`named` by the parameter
        (``budget_s '10': a number, not str``; a ``detail`` that starts with ``:`` follows the name directly).
        ``others``: the parameters the detail names as ``{name}`` fields (``"needs {p99_ms}"``)."""
        error = cls("", parameter=parameter, detail=detail, others=others)
        error.args = (error.named(parameter),)
        return error

    @classmethod
    def naming(cls, text: str, parameters: tuple[str, ...]) -> "UsageError":
        """An error whose ``text`` names library ``parameters`` as ``{name}`` fields, none of them first
        (``"... longer than {iters} 10; raise {iters}"``); its message names them as the library does
        (:meth:`worded`)."""
        error = cls("", detail=text, others=parameters)
        error.args = (error.worded(),)
        return error

    def worded(self, name_of: Callable[[str], str] = str) -> str:
        """The detail with ``name_of(parameter)`` in each parameter's field (:meth:`naming`, :meth:`bad`)."""
        detail = self.detail or ""
        for other in self.others:
            detail = detail.replace("{" + other + "}", name_of(other))
        return detail

    def named(self, name: str, name_of: Callable[[str], str] = str) -> str:
        """The message with ``name`` (a parameter or its flag) in the parameter's place and ``name_of(other)`` in
        each other parameter's field (the parameter itself by default); the message itself for an error made
        without :meth:`bad`."""
        if self.detail is None:
            return str(self)
        detail = self.worded(name_of)
        return name + (detail if detail.startswith(":") else " " + detail)


class Stopped(UsageError):
    """A verb stopped by ``error`` (a :class:`UsageError` met mid-run, e.g. an endpoint that failed every request)
    after some of its work was kept: ``partial`` is the record of what was kept (stored, marked ``interrupted``,
    a note naming the error). The message is the error's; the CLI writes ``partial.to_json()`` to the command's
    ``--json`` (:func:`surrobench.cli.options.checked_command`) and exits :data:`EXIT_USAGE`."""

    def __init__(self, error: UsageError, partial) -> None:
        super().__init__(str(error), parameter=error.parameter, detail=error.detail, others=error.others)
        self.partial = partial


class ModelError(UsageError):
    """The user's model code failed: its factory or its ``example_inputs`` hook raised, or returned something
    other than a module or tensors.

    The message names the model, the hook and the type of the exception it raised
    (``model m.py:build: factory build() raised ValueError: boom``), so it is the whole label of the failure
    (:func:`surrobench.execution.failures.failure_label`): a sweep records the config as ``error`` with it and
    goes on (exit code :data:`EXIT_CONFIGS_FAILED`), never as a usage error. Where no sweep records it (a model
    built before anything runs, as ``serve`` does) it ends the command as any UsageError does.
    """


class StoreWriteError(UsageError):
    """A write to the results database failed where the user's environment, not the data, is at fault.

    ``path``: the database; ``cause``: what failed, in words (``disk full``, ``locked by another process``,
    ``read-only``, ``I/O error``: :func:`surrobench.results.store.write_failure`)."""

    def __init__(self, message: str, *, path: str, cause: str) -> None:
        super().__init__(message)
        self.path = path
        self.cause = cause


class Unsaved(UsageError):
    """A command measured what its results database could not store (``error``, a :class:`StoreWriteError`).

    ``document``: everything it measured, as the JSON document its ``--json`` writes (a run's ``surrobench/run-v3``,
    a serve run's ``serve-v1``, an optimization's ``optimize-v3``), to be written elsewhere and imported once the
    database can be written (:func:`surrobench.import_run`); ``what`` and ``record_id`` name it (``run``,
    ``serve run``, ``optimization``); ``measured``: how many ``unit`` s it holds, ``stored`` how many of them the
    database took, where known. Its runs are marked ``unsaved``
    where that write still succeeded. The CLI writes the document to the command's ``--json``, else to a recovery
    file beside the database (:func:`surrobench.results.recovery.write_recovery`), and names it."""

    def __init__(
        self,
        error: StoreWriteError,
        document: dict,
        record_id: str,
        measured: int,
        *,
        what: str = "run",
        unit: str = "config",
        stored: int | None = None,
    ) -> None:
        kept = "not all stored" if stored is None else f"{stored} stored"
        super().__init__(f"{error}; {measured} {unit}(s) measured, {kept}")
        self.error = error
        self.document = document
        self.record_id = record_id
        self.measured = measured
        self.what = what


# Exit codes of the command line, one home (docs/cli.md's table lists them).
EXIT_OK = 0
#: ``compare --fail-on-regression`` found a regression.
EXIT_REGRESSION = 1
#: bad input or usage (:class:`UsageError`, click's own usage errors), an unwritable output.
EXIT_USAGE = 2
#: the sweep finished and was stored, but at least one config ended ``oom``, ``error``, ``timeout`` or ``nonfinite`` (a
#: :class:`ModelError` included: the user's model failed, not the command's input).
EXIT_CONFIGS_FAILED = 3
#: ``diagnose``: a config (or a trace) had nothing to judge: its profile holds no op, or a CUDA profile no kernel
#: (:mod:`surrobench.analysis.evidence_checks`); "cannot judge", never "no findings" and 0.
EXIT_CANNOT_JUDGE = 4
#: interrupted (Ctrl-C, SIGINT): 128 + signal 2, the shell convention; SIGTERM (143) and SIGHUP (129) are
#: handled as Ctrl-C and exit 128 + their own number (:mod:`surrobench.cli.signals`).
EXIT_INTERRUPTED = 130
