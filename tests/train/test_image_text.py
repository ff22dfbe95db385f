"""task=image_text: the captions tokenized once and drawn per step, the presets and the settings'
checks, a run of both towers (resumed exactly), gradient caching through the towers, the
SigLIP phase record, and the evaluation's zero-shot and retrieval results."""

import json
import math
import warnings

import pytest
import torch
from torch import nn

from contrastkit import losses
from contrastkit.cli import main
from contrastkit.data import CaptionedImages
from contrastkit.data.images import DatasetInfo
from contrastkit.evaluate import evaluate_run
from contrastkit.models import ByteTokenizer
from contrastkit.theory import sigmoid_optimum
from contrastkit.train import PretrainConfig, load_checkpoint, load_config, loop, pretrain
from contrastkit.train.grad_cache import grad_cache
from contrastkit.train.image_text import TokenizedCaptions, drawn_captions
from tests.train.tiny_captions import TINY, TinyTowers, tiny_image_text_config


def _captioned(counts):
    info = DatasetInfo("fake", channels=3, image_size=4, num_classes=0, mean=(0.5,) * 3,
                       std=(0.5,) * 3)
    captions = tuple(tuple(f"image {i} caption {k}" for k in range(count))
                     for i, count in enumerate(counts))
    images = torch.zeros(len(counts), 3, 4, 4, dtype=torch.uint8)
    return CaptionedImages(images, captions, torch.full((len(counts),), -1), info)


def test_captions_are_tokenized_once_with_each_image_s_own_in_its_first_rows():
    dataset = _captioned([1, 3, 2])
    tokenizer = ByteTokenizer(context_length=24)
    tokenized = TokenizedCaptions(dataset, tokenizer)
    assert tokenized.tokens.shape == (3, 3, 24) and tokenized.counts.tolist() == [1, 3, 2]
    for i, captions in enumerate(dataset.captions):
        assert torch.equal(tokenized.tokens[i, :len(captions)], tokenizer(list(captions)))
        for slot in range(len(captions), 3):  # padding repeats the first caption
            assert torch.equal(tokenized.tokens[i, slot], tokenizer([captions[0]])[0])
    images, labels, tokens, counts = tokenized.__getitems__([2, 0])
    assert torch.equal(tokens, tokenized.tokens[[2, 0]]) and counts.tolist() == [2, 1]
    assert tokenized[1][3] == 3


def test_a_dataset_without_captions_is_an_error():
    from contrastkit.data import load_dataset

    with pytest.raises(ValueError, match="task=image_text needs a captioned dataset"):
        TokenizedCaptions(load_dataset("digits", "train"), ByteTokenizer())


def test_drawn_captions_are_uniform_among_each_image_s_own():
    counts = torch.tensor([1, 2, 3, 5])
    tokens = torch.arange(4 * 5).view(4, 5, 1)  # token value = 5 * image + slot
    generator = torch.Generator().manual_seed(0)
    draws = torch.stack([drawn_captions(tokens, counts, generator, 4, slice(0, 4))[:, 0]
                         for _ in range(6000)])
    slots = draws - 5 * torch.arange(4)
    for image, count in enumerate(counts.tolist()):
        seen = torch.bincount(slots[:, image], minlength=5)
        assert seen[count:].sum() == 0  # the padding is never drawn
        # chi-square against the uniform over the image's captions (p < 0.001 fails)
        expected = 6000 / count
        statistic = ((seen[:count] - expected) ** 2 / expected).sum().item()
        assert statistic < {1: 1e-9, 2: 10.8, 3: 13.8, 5: 18.5}[count], (image, statistic)


def test_each_process_draws_its_rows_of_the_global_batch_s_captions():
    counts = torch.tensor([3, 1, 4, 2, 5, 3])
    tokens = torch.arange(6 * 5).view(6, 5, 1)
    whole = drawn_captions(tokens, counts, torch.Generator().manual_seed(4), 6, slice(0, 6))
    second = drawn_captions(tokens[3:], counts[3:], torch.Generator().manual_seed(4), 6,
                            slice(3, 6))
    assert torch.equal(second, whole[3:])


def test_the_image_text_preset_comes_under_the_settings_given_with_it():
    config = load_config(overrides=["task=image_text", "loss=siglip", "epochs=7"])
    assert (config.dataset, config.loss, config.vrns, config.optimizer, config.epochs) == (
        "captioned_shapes", "siglip", 0.0, "adamw", 7)
    assert config.learn_temperature and config.name == "shapes-image-text"
    # back to views: the views task's main job again, under what is given with it
    views = config.with_overrides({"task": "views", "epochs": 9})
    assert views.to_dict() == {**PretrainConfig().to_dict(), "epochs": 9}


@pytest.mark.parametrize(("overrides", "message"), [
    (["text_width=32"], "text_width=32 would be ignored with task=views"),
    (["task=image_text", "projector_hidden=64"], "project linearly to projector_out"),
    (["task=image_text", "clip_checkpoint=x.pt"], "clip_checkpoint needs clip_model"),
    (["task=image_text", "clip_model=ck-tiny-vit", "backbone=resnet18"],
     "brings its own towers"),
    (["task=pairs"], "task must be one of"),
])
def test_settings_another_task_would_ignore_are_errors(overrides, message):
    with pytest.raises(ValueError, match=message):
        load_config(overrides=overrides)


@pytest.mark.parametrize(("name", "message"), [
    ("ck-huge", "clip_model must be an open_clip architecture, one of .*ck-tiny-vit"),
    ("ViT-B-16-SigLIP", "clip_model: the open_clip model 'ViT-B-16-SigLIP' needs a download"),
])
def test_an_open_clip_model_that_cannot_be_built_is_named_by_its_setting(name, message):
    pytest.importorskip("open_clip", reason="needs the clip extra (open_clip_torch)")
    with pytest.raises(ValueError, match=message):
        load_config(overrides=["task=image_text", f"clip_model={name}"])


def test_the_user_s_own_objects_belong_to_the_views_task(tmp_path):
    config = tiny_image_text_config(tmp_path)
    with pytest.raises(ValueError, match="your own encoder belong"):
        pretrain(config, encoder=nn.Linear(2, 2))


def test_a_siglip_run_trains_both_towers_and_records_its_phase(tmp_path):
    config = tiny_image_text_config(tmp_path, loss="siglip")
    result = pretrain(config)
    assert len(result.history) == 2 and (config.run_dir / "phase.png").is_file()
    last = result.history[-1]
    optimum = sigmoid_optimum(16, last["siglip_scale"], -last["siglip_bias"])
    assert last["siglip_regime"] == optimum.regime
    assert last["siglip_predicted_pos"] == optimum.positive_similarity
    assert last["siglip_predicted_neg"] == optimum.negative_similarity
    assert last["siglip_measured_pos"] == last["pos_sim_mean"]
    assert last["siglip_theory_exact"] == 1.0  # d = 16 embedding dimensions >= N = 16 pairs
    assert last["siglip_t"] == last["siglip_scale"] != config.siglip_scale  # it learned
    windows = (config.run_dir / "log.csv").read_text()
    assert "monitor/siglip_predicted_pos" in windows and "monitor/siglip_regime" in windows
    state = load_checkpoint(config.run_dir)["model"]
    initial = _initial_towers(config).state_dict()
    for tower in ("backbone.", "text.", "image_projection", "text_projection"):
        assert any(key.startswith(tower) and not torch.equal(value, initial[key])
                   for key, value in state.items()), tower


def test_a_run_killed_mid_epoch_resumes_exactly(tmp_path, monkeypatch):
    """Checkpoints every 2 steps; the process dies in step 3 of epoch 2 (4 steps per epoch):
    the resumed run draws the same views and captions and ends bitwise where the uninterrupted
    one ends."""
    straight = pretrain(tiny_image_text_config(tmp_path / "straight", loss="siglip"))
    config = tiny_image_text_config(tmp_path / "resumed", loss="siglip", checkpoint_every=2)
    real_step, calls = loop.train_step, []

    def dies_in_step_3_of_epoch_2(*args):
        calls.append(1)
        if len(calls) == 4 + 3:
            raise Killed
        return real_step(*args)

    monkeypatch.setattr(loop, "train_step", dies_in_step_3_of_epoch_2)
    with pytest.raises(Killed):
        pretrain(config)
    monkeypatch.undo()
    assert load_checkpoint(config.run_dir)["step"] == 2
    resumed = pretrain(config.with_overrides({"checkpoint_every": 0}), resume="last")
    for key, value in straight.encoder.state_dict().items():
        assert torch.equal(value, resumed.encoder.state_dict()[key]), key
    assert straight.history[-1]["loss"] == resumed.history[-1]["loss"]
    assert straight.history[-1]["siglip_scale"] == resumed.history[-1]["siglip_scale"]


class Killed(Exception):
    pass


@pytest.mark.parametrize("loss", ["info_nce", "siglip"])
def test_gradient_caching_through_the_two_towers_is_the_plain_gradient(loss, float64):
    torch.manual_seed(0)
    towers = TinyTowers().double()
    images = torch.randn(10, 3, 2, 2)
    tokens = torch.randint(0, 10, (10, 5))
    criterion = losses.build(loss, {})
    criterion(towers(images, tower="image"), towers(tokens, tower="text")).backward()
    plain = {name: p.grad.clone() for name, p in towers.named_parameters()}
    towers.zero_grad()
    grad_cache(towers, criterion, images, tokens, 3, towers=("image", "text"))
    for name, parameter in towers.named_parameters():
        torch.testing.assert_close(parameter.grad, plain[name], rtol=1e-12, atol=1e-14)


def test_evaluate_reports_zero_shot_retrieval_and_the_cross_modal_statistics(tmp_path, capsys):
    config = tiny_image_text_config(tmp_path, epochs=1)
    pretrain(config)
    capsys.readouterr()
    assert main(["evaluate", str(config.run_dir), "--pairs", "30", "--knn-k", "5",
                 "--no-progress", "--device", "cpu"]) == 0
    printed = capsys.readouterr().out
    results = json.loads((config.run_dir / "eval.json").read_text())
    assert 0 <= results["zero_shot_top1"] <= 100
    for direction, name in (("image_to_text", "image -> text"),
                            ("text_to_image", "text -> image")):
        for k in (1, 5, 10):
            assert 0 <= results[f"{direction}_r{k}"] <= 100
        assert results[f"{direction}_r1"] <= results[f"{direction}_r10"]
        # MRR@10 lies between hit@1 and hit@10, the recalls in percent
        mrr, ndcg = results[f"{direction}_mrr10"], results[f"{direction}_ndcg10"]
        assert results[f"{direction}_r1"] / 100 <= mrr <= results[f"{direction}_r10"] / 100
        assert 0 <= ndcg <= 1
        assert f"  {name}  R@1 " in printed
        assert f"MRR@10 {mrr:.4f}   nDCG@10 {ndcg:.4f}" in printed
    assert results["pairs"] == 30 and math.isfinite(results["neg_sim_var"])
    assert {"linear_top1", "knn_top1"} <= set(results)


def _initial_towers(config):
    from contrastkit.data import load_dataset
    from contrastkit.train.checkpoint import seed_everything
    from contrastkit.train.image_text import build_towers

    seed_everything(config.seed)
    return build_towers(config, load_dataset(TINY, "train").info)



def test_an_open_clip_model_from_a_local_file_trains_and_evaluates(tmp_path, monkeypatch):
    """A randomly initialised tiny open_clip model saved to a file (nothing is downloaded) is
    the starting point of a run: its weights are read, trained, and evaluated."""
    pytest.importorskip("open_clip", reason="needs the clip extra (open_clip_torch)")
    from contrastkit.models.open_clip_towers import open_clip_two_tower

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    torch.manual_seed(3)
    start = open_clip_two_tower("ck-tiny-vit")
    path = tmp_path / "tiny.pt"
    torch.save(start.clip.state_dict(), path)
    config = tiny_image_text_config(tmp_path, epochs=1, clip_model="ck-tiny-vit",
                                    clip_checkpoint=str(path), projector_out=128,
                                    text_width=64, text_layers=2)
    result = pretrain(config)
    trained = result.encoder.state_dict()
    moved = [key for key, value in start.state_dict().items()
             if not torch.equal(value, trained[key])]
    assert moved and any("visual" in key for key in moved) and any(
        "transformer" in key and "visual" not in key for key in moved)
    results = evaluate_run(config.run_dir, pairs=20, knn_k=5, progress=False, device="cpu")
    assert 0 <= results["text_to_image_r1"] <= 100 and "zero_shot_top1" in results


def test_a_caption_file_run_skips_the_probes_it_cannot_make(tmp_path, capsys):
    """The format users bring (a TSV of image paths and captions, no classes): the run trains
    and evaluate reports retrieval and the pair statistics, without class probes."""
    from PIL import Image

    data = tmp_path / "data"
    data.mkdir()
    for split, count in (("train", 20), ("test", 12)):
        rows = ["filepath\ttitle"]
        for i in range(count):
            colour = (20 * i % 256, 255 - 20 * i % 256, 90)
            Image.new("RGB", (40, 36), colour).save(data / f"{split}{i}.png")
            rows.append(f"{split}{i}.png\ta picture in colour {colour}")
        (data / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    config = tiny_image_text_config(tmp_path, dataset="captions", data_dir=str(data),
                                    batch_size=8, epochs=1)
    pretrain(config)
    capsys.readouterr()
    results = evaluate_run(config.run_dir, pairs=10, progress=True, device="cpu")
    assert "text_to_image_r10" in results and "linear_top1" not in results
    assert "zero_shot_top1" not in results and results["pairs"] == 10
    stages = capsys.readouterr().err  # no stage is said done that did not run (issue 39)
    assert "retrieval, pair statistics: done" in stages and "zero-shot" not in stages


def test_captions_cut_short_by_the_byte_tokenizer_are_announced():
    dataset = _captioned([2, 1])  # captions of 17 bytes
    with pytest.warns(RuntimeWarning, match=r"3 of 3 captions .* set context_length=19"):
        TokenizedCaptions(dataset, ByteTokenizer(context_length=12))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TokenizedCaptions(dataset, ByteTokenizer(context_length=19))
