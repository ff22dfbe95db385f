"""`contrastkit pretrain` and `contrastkit evaluate` end to end on a tiny run."""

import json

from contrastkit.cli import main


def test_pretrain_then_evaluate_prints_and_saves_the_results(tmp_path, capsys):
    settings = [f"runs_dir={tmp_path}", "name=cli", "epochs=1", "batch_size=128",
                "projector_hidden=32", "progress=false", "device=cpu"]  # default warm-up
    assert main(["pretrain", *settings]) == 0
    run_dir = tmp_path / "cli"
    for name in ("config.yaml", "metrics.jsonl", "last.pt", "curves.png"):
        assert (run_dir / name).is_file(), name
    assert main(["evaluate", str(run_dir), "--knn-k", "20",
                 "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "pretrained 1 epoch:" in out and "(1 epoch completed)" in out  # one convention
    assert "linear probe" in out and "kNN (k=20)" in out and "variance" in out
    results = json.loads((run_dir / "eval.json").read_text())
    assert 10 < results["linear_top1"] <= 100 and results["linear_top5"] >= results["linear_top1"]
    assert results["pairs"] == 1437 and results["neg_sim_var"] > 0
    assert results["epochs_completed"] == 1
    assert json.loads((run_dir / "metrics.jsonl").read_text())["epochs_completed"] == 1


def test_unknown_key_and_missing_run_are_reported(tmp_path, capsys):
    assert main(["pretrain", "bogus=1"]) == 2
    assert "valid keys" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "none")]) == 2
    assert f"RUN {tmp_path / 'none'} does not exist" in capsys.readouterr().err
