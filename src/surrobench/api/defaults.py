"""The library's defaults and option records that the CLI's flags name, in one place it may import: none of
these modules imports torch, so ``--help`` starts without it (docs/benchmarks/startup.md)."""
# ruff: noqa: F401

from surrobench.analysis.accuracy import DEFAULT_TOLERANCE
from surrobench.analysis.gaps import DEFAULT_GAP_THRESHOLD_NS
from surrobench.analysis.thresholds import load_thresholds
from surrobench.collect.profile_phase import DEFAULT_WINDOW_S, PerfOptions, ProfileOptions, prepare_trace_dir
from surrobench.collect.torch_profiler import DEFAULT_ACTIVE, DEFAULT_WAIT, DEFAULT_WARMUP, ProfileSchedule
from surrobench.execution.config import DEFAULT_ITERS, MAX_COUNT, MIN_ITERS, MIN_WARMUP, low_iterations_note
from surrobench.results.compare import DEFAULT_THRESHOLD, MIN_GATE_ROUNDS
from surrobench.results.store import DEFAULT_DB, replace_file, write_recovery
from surrobench.tune.request import DEFAULT_BUDGET_S, DEFAULT_PROCESS_PAIRS, DEFAULT_ROUNDS
from surrobench.workload.inputs import DEFAULT_INPUT_SETS
from surrobench.workload.spec import parse_devices
