"""``benchmarks/gpu_losses.py`` runs on the CPU too (``--device cpu --quick``): it writes its
table and its raw numbers, marks a peer that is not installed, runs out of memory or fails, and
goes on. No timing is checked."""

from __future__ import annotations

import json

import pytest
import torch

from benchmarks import gpu_losses
from benchmarks._report import REPORT


def _run(tmp_path, *extra):
    gpu_losses.main(["--device", "cpu", "--quick", "--dim", "16", "--out", str(tmp_path),
                     *extra])
    return (tmp_path / "gpu_losses.md").read_text(), json.loads(
        (tmp_path / "gpu_losses.json").read_text())


def _missing(loss):
    raise ImportError("not here")


def test_writes_the_table_and_every_timing(tmp_path, monkeypatch, capsys):
    for peer in gpu_losses.PEERS:
        monkeypatch.setitem(gpu_losses.IMPLEMENTATIONS, peer, _missing)
    published = REPORT.read_text()
    table, raw = _run(tmp_path)
    sizes = gpu_losses.QUICK_SIZES["cpu"]
    rows = {(r["loss"], r["dtype"], r["batch"], r["implementation"]): r for r in raw["results"]}
    for loss, implementations in gpu_losses.LOSSES.items():
        for dtype in gpu_losses.DTYPES:
            assert f"**{loss}, {dtype}**" in table
            for batch in sizes:
                for impl in implementations:
                    row = rows[loss, dtype, batch, impl]
                    if impl in gpu_losses.PEERS:
                        assert row["error"] == "not installed"
                    else:
                        assert len(row["times_ms"]) == raw["repeats"] == 3
                        assert row["ms"] == sorted(row["times_ms"])[1]
                assert rows[loss, dtype, batch, "contrastkit"]["value"] > 0
    assert "| contrastkit / floor |" in table and "not installed" in table
    assert table.strip() in capsys.readouterr().out
    assert REPORT.read_text() == published  # printed, written to --out, not published


class _OutOfMemory:
    def __init__(self, loss):
        pass

    def __call__(self, u, v):
        raise torch.OutOfMemoryError("CUDA out of memory (simulated)")


def _broken(loss):
    def step(u, v):
        raise TypeError("an API of another version")
    return step


def test_a_peer_out_of_memory_or_failing_is_marked_and_the_rest_runs(tmp_path, monkeypatch):
    monkeypatch.setitem(gpu_losses.IMPLEMENTATIONS, "PML NTXentLoss", _OutOfMemory)
    monkeypatch.setitem(gpu_losses.IMPLEMENTATIONS, "lightly NTXentLoss", _broken)
    table, raw = _run(tmp_path, "--losses", "simclr", "--dtypes", "float32")
    cells = {r["implementation"]: r for r in raw["results"] if r["batch"] == 16}
    assert cells["PML NTXentLoss"] == {"loss": "simclr", "dtype": "float32", "batch": 16,
                                       "implementation": "PML NTXentLoss", "error": "OOM"}
    assert cells["lightly NTXentLoss"]["error"] == "failed: TypeError"
    assert "ms" in cells["contrastkit"] and "ms" in cells["floor"]
    assert "| PML NTXentLoss | OOM | OOM |" in table


def test_contrastkit_failing_is_not_hidden(tmp_path, monkeypatch):
    monkeypatch.setitem(gpu_losses.IMPLEMENTATIONS, "contrastkit", _broken)
    with pytest.raises(TypeError, match="another version"):
        _run(tmp_path, "--losses", "info_nce", "--dtypes", "float32")


def test_the_report_of_an_earlier_run_is_written_again_from_its_json(tmp_path, monkeypatch,
                                                                     capsys):
    """``--report-from``: the same tables from the recorded numbers (the machine, versions and
    command the run recorded), nothing measured; a cell of ours that ran out of memory is a
    miss of both targets."""
    for peer in gpu_losses.PEERS:
        monkeypatch.setitem(gpu_losses.IMPLEMENTATIONS, peer, _missing)
    table, raw = _run(tmp_path)
    capsys.readouterr()
    monkeypatch.setattr(gpu_losses, "measure", None)  # nothing may be measured
    gpu_losses.main(["--report-from", str(tmp_path / "gpu_losses.json")])
    again = capsys.readouterr().out
    assert table.strip() in again
    ours = next(r for r in raw["results"] if r["implementation"] == "contrastkit"
                and (r["loss"], r["dtype"], r["batch"]) == ("info_nce", "float32", 64))
    for key in ("ms", "times_ms", "peak_bytes", "value"):
        ours.pop(key)
    ours["error"] = "OOM"
    (tmp_path / "gpu_losses.json").write_text(json.dumps(raw))
    gpu_losses.main(["--report-from", str(tmp_path / "gpu_losses.json")])
    assert "info_nce, float32: at or below the fastest peer: **not met** at B = 64 (OOM)" in (
        capsys.readouterr().out)


def test_the_profile_of_the_losses_runs_on_the_cpu(tmp_path):
    """``benchmarks.gpu_profile`` (run by the GPU check): a table per loss with the Triton
    passes on and off, the switch restored after."""
    from benchmarks import gpu_profile
    from contrastkit.losses.kernels import triton_passes

    gpu_profile.main(["--device", "cpu", "--batch", "16", "--dim", "8", "--rows", "3",
                      "--out", str(tmp_path)])
    text = (tmp_path / "gpu_profile.txt").read_text()
    for name in gpu_profile.LOSSES:
        for state in ("on", "off"):
            assert f"==== {name}, bfloat16, B = 16, Triton passes {state}" in text
    assert text.count("Self CPU") >= 6 and triton_passes.ENABLED
