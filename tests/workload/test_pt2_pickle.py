"""A ``.pt2`` whose weight is flagged as a pickle would run the pickle's payload inside torch.export.load:
refused unless ``--trust-pickle`` (the payload here writes a marker file when unpickled)."""

from __future__ import annotations

import io
import json
import os
import zipfile

import torch
from conftest import run_cli
from test_loader import export

from surrobench.workload.loader import pickle_members


class _Payload:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _poison(src: str, dst: str, marker: str, member: str) -> None:
    """Copy ``src`` with its first weight flagged ``use_pickle`` and stored as a pickle (``member="weights"``),
    or its sample inputs replaced by a pickle (``member="sample_inputs"``); the pickle's payload creates
    ``marker``."""
    buf = io.BytesIO()
    torch.save(_Payload(marker), buf)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        names = zin.namelist()
        config_name = next(n for n in names if n.endswith("model_weights_config.json"))
        config = json.loads(zin.read(config_name))
        first = next(iter(config["config"].values()))
        for item in zin.infolist():
            data = zin.read(item.filename)
            if member == "weights" and item.filename == config_name:
                first["use_pickle"] = True
                data = json.dumps(config).encode()
            elif member == "weights" and item.filename.endswith(f"/data/weights/{first['path_name']}"):
                data = buf.getvalue()
            elif member == "sample_inputs" and item.filename.endswith("sample_inputs/model.pt"):
                data = buf.getvalue()
            zout.writestr(item, data)


def test_clean_export_holds_nothing_to_unpickle(tmp_path):
    assert pickle_members(tmp_path.joinpath(export(tmp_path, dynamic_batch=True))) == []


def test_pickled_weight_or_inputs_are_refused_without_trust_and_nothing_runs(tmp_path, capsys):
    clean = export(tmp_path, dynamic_batch=True)
    for member in ("weights", "sample_inputs"):
        bad, marker = tmp_path / f"{member}.pt2", tmp_path / f"{member}.ran"
        _poison(clean, str(bad), str(marker), member)
        assert pickle_members(bad)
        code = run_cli(
            [
                "run",
                "--model",
                str(bad),
                "--device",
                "cpu",
                "--db",
                str(tmp_path / "r.db"),
                "--iters",
                "2",
                "--warmup",
                "0",
            ]
        )
        err = capsys.readouterr().err
        assert code == 2 and "load through pickle" in err and "--trust-pickle" in err
        assert not os.path.exists(marker)
        # with the flag the user vouches for the file: torch unpickles it (the payload runs)
        run_cli(
            [
                "run",
                "--model",
                str(bad),
                "--device",
                "cpu",
                "--db",
                str(tmp_path / "r.db"),
                "--iters",
                "2",
                "--warmup",
                "0",
                "--trust-pickle",
            ]
        )
        capsys.readouterr()
        assert os.path.exists(marker)
