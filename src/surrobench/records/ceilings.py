"""A device's measured roofline ceilings: copy bandwidth and matmul rate per precision.

Measured by :mod:`surrobench.collect.ceilings` (``surrobench calibrate``), stored by the results store, read by
the roofline (:mod:`surrobench.analysis.roofline`; Williams, Waterman, Patterson, CACM 52(4), 2009).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from surrobench.records import schemas

#: Precision whose ceiling stands in for one that was not measured: same unit width (tensor cores).
_STAND_IN = {"fp16": "bf16", "bf16": "fp16", "tf32": "fp32", "fp32": "tf32"}


def calibrate_command(device: str, threads: int | None = None) -> str:
    """The ``surrobench calibrate`` command that stores the ceilings a run on ``device`` reads (on a CPU, kept per
    torch thread count, named when known)."""
    command = f"surrobench calibrate --device {device}"
    return f"{command} --threads {threads}" if device == "cpu" and threads is not None else command


@dataclass(frozen=True)
class Ceilings(schemas.Plain):
    """A device's measured ceilings: ``device_name`` as ``torch.cuda.get_device_name`` (or the CPU model) reports
    it; ``copy_gbps`` the copy bandwidth (device-to-device, or host memory on the CPU), read + write bytes, GB/s;
    ``matmul_tflops`` the dense matmul rate per precision, TFLOP/s; ``measured`` the ISO-8601 time of the
    calibration ("" for the built-in fallback); ``note`` how they were obtained."""

    device_name: str
    copy_gbps: float
    matmul_tflops: dict[str, float]
    measured: str = ""
    note: str = ""

    def unusable(self, precision: str) -> str | None:
        """Why the roofline cannot be drawn for ``precision`` (a ceiling missing, zero or not finite), or
        None when both ceilings are usable."""
        if not _usable(self.copy_gbps):
            return f"copy bandwidth {self.copy_gbps!r} GB/s is not a ceiling (zero or not finite)"
        try:
            peak = self.peak_tflops(precision)
        except KeyError:
            return f"no {precision} matmul rate calibrated"
        if not _usable(peak):
            return f"{precision} matmul rate {peak!r} TFLOP/s is not a ceiling (zero or not finite)"
        return None

    def peak_tflops(self, precision: str) -> float:
        """The matmul ceiling for ``precision`` (a stand-in precision's when that one was not measured).

        Raises:
            KeyError: neither ``precision`` nor its stand-in was measured.
        """
        if precision in self.matmul_tflops:
            return self.matmul_tflops[precision]
        return self.matmul_tflops[_STAND_IN[precision]]

    def ridge_flop_per_byte(self, precision: str) -> float:
        """Ridge point, FLOP/byte: ``peak FLOP/s / bandwidth``."""
        return self.peak_tflops(precision) * 1e12 / (self.copy_gbps * 1e9)

    def document(self) -> dict:
        """The ``surrobench calibrate --json`` document: :meth:`to_json` with its ``schema``."""
        return {"schema": schemas.CEILINGS, **self.to_json()}

    @classmethod
    def from_json(cls, d: dict) -> "Ceilings":
        """Inverse of :meth:`to_json` and of :meth:`document` (its ``schema`` must then be ceilings-v1).

        Raises:
            ValueError: another ``schema``; TypeError: a key missing, or one that is not a field.
        """
        if d.get("schema", schemas.CEILINGS) != schemas.CEILINGS:
            raise ValueError(f"not a {schemas.CEILINGS} document (schema {str(d['schema'])[:80]!r})")
        return cls(**{k: v for k, v in d.items() if k != "schema"})


def _usable(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0
