"""The one exception type for errors a user can cause (:class:`UsageError`: one line, exit code 2, docs/design.md,
"Interfaces"), its kinds, and the exit codes. Anything else that escapes is a bug and keeps its traceback.
"""

from collections.abc import Callable, Sequence


class Interrupted(Exception):
    """The user interrupted a verb (Ctrl-C, SIGTERM, SIGHUP) after some of its work was kept: ``partial`` is the
    record the verb would have returned, of what was kept (stored, marked ``interrupted``). The CLI writes
    ``partial.to_json()`` to ``--json`` and exits :data:`EXIT_INTERRUPTED`. Not a ``KeyboardInterrupt``: click
    would turn that into its own abort and lose the message."""

    def __init__(self, message: str, partial=None) -> None:
        super().__init__(message)
        self.partial = partial


class UsageError(Exception):
    """Bad input or usage, its message one line saying what was wrong, where, and how to fix it. A bad value of one
    library parameter is made with :meth:`bad` (``parameter`` as the library names it, ``detail`` the rest), so
    the CLI can put its flag in the parameter's place (:func:`surrobench.cli.options.usage_line`) without reading
    the message; other parameters the detail names are its ``{name}`` fields, listed in ``others``.
    """

    def __init__(
        self, message: str, *, parameter: str | None = None, detail: str | None = None, others: tuple[str, ...] = ()
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
        """An error whose ``text`` names library ``parameters`` as ``{name}`` fields, none of them first (``"... longer
        than {iters} 10; raise {iters}"``); its message names them as the library does (:meth:`worded`)."""
        error = cls("", detail=text, others=parameters)
        error.args = (error.worded(),)
        return error

    @classmethod
    def not_applying(cls, reason: str, given: Sequence[str], others: tuple[str, ...] = ()) -> "UsageError":
        """The error of parameters ``given`` that do not apply, ``reason`` why (naming ``others`` as fields):
        ``run diagnoses a stored run, so warmup, iters do not apply: drop them``, as :meth:`naming`."""
        verb, obj = ("does", "it") if len(given) == 1 else ("do", "them")
        names = ", ".join("{" + name + "}" for name in given)
        return cls.naming(f"{reason}, so {names} {verb} not apply: drop {obj}", (*others, *given))

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
    """A verb stopped by ``error`` (a :class:`UsageError` met mid-run, exit :data:`EXIT_USAGE`) after keeping
    ``partial`` (as :class:`Interrupted`), ``kept`` added to the message (``; 1 load point(s) stored as run R``)."""

    def __init__(self, error: UsageError, partial, kept: str = "") -> None:
        detail = error.detail and error.detail + kept
        super().__init__(f"{error}{kept}", parameter=error.parameter, detail=detail, others=error.others)
        self.partial = partial


class ModelError(UsageError):
    """The user's model code failed: its factory or ``example_inputs`` hook raised, or returned no module or
    tensors. The message (``model m.py:build: factory build() raised ValueError: boom``) is the failure's whole
    label: a sweep records the config ``error`` and goes on (:data:`EXIT_CONFIGS_FAILED`); where no sweep records
    it (``serve``) it ends the command as any UsageError does.
    """


class StoreWriteError(UsageError):
    """A write to the results database at ``path`` failed for the environment's fault; ``cause`` in words
    (:func:`surrobench.results.store.write_failure`)."""

    def __init__(self, message: str, *, path: str, cause: str) -> None:
        super().__init__(message)
        self.path = path
        self.cause = cause


class Unsaved(UsageError):
    """A command measured what its results database could not store (``error``). ``document``: everything it
    measured, as its ``--json`` document, to import later (:func:`surrobench.import_run`); ``what`` and
    ``record_id`` name it; ``measured`` ``unit`` s, ``stored`` of them (None: unknown). The CLI writes the
    document to ``--json``, else to a recovery file (:func:`surrobench.results.store.write_recovery`)."""

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
#: :class:`ModelError` included: the user's model failed, not the command's input); ``serve``: a policy ``nonfinite``.
EXIT_CONFIGS_FAILED = 3
#: ``diagnose``: a config (or a trace) had nothing to judge: its profile holds no op, or a CUDA profile no kernel
#: (:mod:`surrobench.analysis.evidence_checks`); "cannot judge", never "no findings" and 0.
EXIT_CANNOT_JUDGE = 4
#: interrupted (Ctrl-C, SIGINT): 128 + signal 2, the shell convention; SIGTERM (143) and SIGHUP (129) are
#: handled as Ctrl-C and exit 128 + their own number (:mod:`surrobench.cli.signals`).
EXIT_INTERRUPTED = 130
