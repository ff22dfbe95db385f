"""The commands' messages say what applies to the command at hand (issue 28): ``--resume`` keeps
a run's saved settings, a damaged config.yaml is one line, each command's hint names its own
option, options are checked by their own names before any work, the Python API's errors name
its arguments, and a simulation too large for the memory is refused before it starts."""

import shlex

import pytest
import torch

import contrastkit.train as train
import contrastkit.train.loop as loop
from contrastkit.cli import main
from contrastkit.evaluate import embed_run, measure_run
from contrastkit.simulate import embeddings as simulated
from contrastkit.simulate import optimize_embeddings
from contrastkit.train import load_checkpoint, pretrain, save_checkpoint
from tests.train.tiny import tiny_config

SHORT = ["name=short", "epochs=1", "batch_size=128", "projector_hidden=32", "progress=false",
         "device=cpu"]


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


# 1. --resume keeps the saved settings; only those given change them


def test_resume_keeps_the_saved_settings_and_a_default_is_no_request(tmp_path, capsys):
    assert main(["pretrain", f"runs_dir={tmp_path}", *SHORT]) == 0
    capsys.readouterr()
    # no epochs=, batch_size=, device=, ...: the run's own, not the defaults (epochs=50)
    assert main(["pretrain", f"runs_dir={tmp_path}", "name=short", "--resume"]) == 0
    assert "already complete (1/1 epochs)" in capsys.readouterr().out
    assert load_checkpoint(tmp_path / "short")["epochs_completed"] == 1
    # a setting given on the command line still changes the saved one
    assert main(["pretrain", f"runs_dir={tmp_path}", "name=short", "--resume", "epochs=2",
                 "--no-progress"]) == 0
    assert load_checkpoint(tmp_path / "short")["epochs_completed"] == 2
    assert main(["pretrain", f"runs_dir={tmp_path}", "name=short", "--resume",
                 "temperature=0.5"]) == 2
    assert "different config (temperature: 0.2 -> 0.5)" in error_line(capsys)


# 2. a damaged config.yaml in the run folder


@pytest.mark.parametrize("content, what", [("", "is empty"), ("- 1\n- 2\n", "is a YAML list"),
                                           ("5\n", "is a YAML int")])
def test_a_damaged_saved_config_is_one_line_naming_the_file(tmp_path, capsys, content, what):
    run = tmp_path / "short"
    run.mkdir()
    (run / "config.yaml").write_text(content)
    assert main(["pretrain", f"runs_dir={tmp_path}", "name=short", "--resume"]) == 2
    err = error_line(capsys)
    assert f"config file {run / 'config.yaml'} {what}" in err
    assert "restore the file" in err and "--overwrite" in err and "overwrite=True" not in err


@pytest.mark.parametrize("content, what", [("", "config.yaml is empty"),
                                           ("- 1\n- 2\n", "must hold a mapping")])
def test_a_damaged_saved_config_is_a_value_error_in_python(tmp_path, content, what):
    config = tiny_config(tmp_path, epochs=1)
    config.run_dir.mkdir(parents=True)
    (config.run_dir / "config.yaml").write_text(content)
    with pytest.raises(ValueError, match=rf"{what}.*overwrite=True"):
        pretrain(config, resume="last")


@pytest.mark.parametrize("damage", ['{"epochs_completed": 1, "loss": 4.', "[1, 2]", "\udcff"])
def test_a_damaged_metrics_file_is_one_line_naming_the_file_and_the_line(tmp_path, capsys,
                                                                          damage):
    """A run's metrics.jsonl cut short (or otherwise damaged) stops ``--resume`` with one line
    that names the file, the line and what to do, not a bare JSON error."""
    assert main(["pretrain", f"runs_dir={tmp_path}", *SHORT]) == 0
    metrics = tmp_path / "short" / "metrics.jsonl"
    metrics.write_text(metrics.read_text() + damage + "\n", errors="surrogateescape")
    capsys.readouterr()
    assert main(["pretrain", f"runs_dir={tmp_path}", "name=short", "--resume", "epochs=2",
                 "--no-progress"]) == 2
    err = error_line(capsys)
    assert f"{metrics} line 2 is not a JSON object of an epoch's metrics" in err
    assert "delete that line" in err


# 3. each command's hint names its own option; no usable checkpoint is said


def fake_run(tmp_path, last: bytes | None, previous: bool):
    """A run folder with a config.yaml, ``last`` as last.pt's bytes and, if ``previous``, a
    loadable previous.pt."""
    config = tiny_config(tmp_path, epochs=1)
    config.run_dir.mkdir(parents=True)
    (config.run_dir / "config.yaml").write_text(config.to_yaml())
    if previous:
        save_checkpoint(config.run_dir, {"epochs_completed": 1, "config": config.to_dict()})
        (config.run_dir / "last.pt").rename(config.run_dir / "previous.pt")
    if last is not None:
        (config.run_dir / "last.pt").write_bytes(last)
    return config


@pytest.mark.parametrize("command, option", [
    (["evaluate"], "--checkpoint previous"), (["embed"], "--checkpoint previous"),
])
def test_evaluate_and_embed_advise_their_own_option(tmp_path, capsys, command, option):
    config = fake_run(tmp_path, b"torn", previous=True)
    assert main([*command, str(config.run_dir), "--device", "cpu"]) == 2
    err = error_line(capsys)
    assert f"use it with {option}" in err and "--resume" not in err


def test_the_python_api_advises_its_own_argument(tmp_path):
    config = fake_run(tmp_path, b"torn", previous=True)
    with pytest.raises(ValueError, match=r'use it with checkpoint="previous"'):
        measure_run(config.run_dir, device="cpu", progress=False)
    with pytest.raises(ValueError, match=r'use it with checkpoint="previous"'):
        embed_run(config.run_dir, device="cpu", progress=False)
    with pytest.raises(ValueError, match=r'use it with resume="previous"'):
        pretrain(config, resume="last")


def test_pretrain_advises_resume_previous(tmp_path, capsys):
    fake_run(tmp_path, b"torn", previous=True)
    assert main(["pretrain", f"runs_dir={tmp_path}", "name=tiny", "--resume"]) == 2
    assert "use it with --resume previous" in error_line(capsys)


@pytest.mark.parametrize("command", [["evaluate"], ["embed"], ["pretrain", "--resume"]])
@pytest.mark.parametrize("previous", [b"", None])
def test_with_no_usable_checkpoint_the_hint_says_so(tmp_path, capsys, command, previous):
    config = fake_run(tmp_path, b"", previous=False)
    if previous is not None:
        (config.run_dir / "previous.pt").write_bytes(previous)
    where = ([f"runs_dir={tmp_path}", "name=tiny"] if command[0] == "pretrain"
             else [str(config.run_dir), "--device", "cpu"])
    assert main([*command, *where]) == 2
    err = error_line(capsys)
    assert "no usable checkpoint" in err or "no other checkpoint" in err
    assert "previous" not in err.replace("previous.pt", "") and "--overwrite" in err


# 4. embed FILE


def test_embed_of_a_file_says_the_argument_must_be_a_run_folder(tmp_path, capsys):
    path = tmp_path / "embeddings.npz"
    path.write_bytes(b"x")
    assert main(["embed", str(path)]) == 2
    err = error_line(capsys)
    assert "must be a run folder" in err and "--out" not in err


# 5. evaluate's options, by their own names, before any work


@pytest.mark.parametrize("option, named", [
    (["--knn-k", "0"], "--knn-k must be >= 1"), (["--pairs", "1"], "--pairs must be >= 2"),
    (["--knn-temperature", "nan"], "--knn-temperature must be finite"),
    (["--knn-temperature", "0"], "--knn-temperature must be > 0"),
    (["--linear-epochs", "0", "--linear-solver", "sgd"], "--linear-epochs must be >= 1"),
    (["--linear-epochs", "0"], "--linear-epochs 0 would be ignored"),
])
def test_evaluate_checks_each_option_first_in_its_own_name(tmp_path, capsys, monkeypatch,
                                                           option, named):
    import contrastkit.evaluate.run as run

    monkeypatch.setattr(run, "start_runtime", lambda *_: pytest.fail("work started"))
    # the run does not even exist: the option is what is wrong first
    assert main(["evaluate", str(tmp_path / "no-run"), *option]) == 2
    assert named in error_line(capsys)


# 6. consistency of the commands and of the Python API's words


def test_pretrain_takes_progress_and_no_progress(tmp_path, monkeypatch):
    configs = []

    def fake_pretrain(config, resume=None, overwrite=False):
        configs.append(config)
        return loop.PretrainResult(config.run_dir, None, [])

    monkeypatch.setattr(train, "pretrain", fake_pretrain)
    monkeypatch.chdir(tmp_path)
    assert main(["pretrain", "--no-progress", "name=a"]) == 0
    assert main(["pretrain", "name=a", "--no-progress"]) == 0
    assert main(["pretrain", "name=a", "--progress"]) == 0
    assert [config.progress for config in configs] == [False, False, True]


def test_one_epoch_is_said_in_the_singular(tmp_path, monkeypatch, capsys):
    history = [{"epochs_completed": 1, "loss": 2.5, "neg_sim_var": 0.01}]
    monkeypatch.setattr(train, "pretrain", lambda config, resume=None, overwrite=False:
                        loop.PretrainResult(config.run_dir, None, history))
    monkeypatch.chdir(tmp_path)
    assert main(["pretrain", "epochs=1"]) == 0
    assert capsys.readouterr().out.startswith("pretrained 1 epoch: loss 2.5000")


def test_embed_help_prints_the_default_once(capsys):
    with pytest.raises(SystemExit):
        main(["embed", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: RUN/embeddings- SPLIT.npz)" in out or "RUN/embeddings-SPLIT.npz" in out
    assert "(default: None)" not in out


def test_the_python_api_names_its_arguments_and_the_command_line_its_options(tmp_path, capsys):
    config = fake_run(tmp_path, None, previous=True)
    (config.run_dir / "previous.pt").rename(config.run_dir / "last.pt")
    with pytest.raises(ValueError) as raised:
        pretrain(config)
    assert 'resume="last"' in str(raised.value) and "overwrite=True" in str(raised.value)
    assert "--" not in str(raised.value)
    assert main(["pretrain", f"runs_dir={tmp_path}", "name=tiny", "device=cpu"]) == 2
    err = error_line(capsys)
    assert "pass --resume to continue it, --overwrite to start it again" in err


# 7. a simulation too large for the memory


def test_a_simulation_too_large_for_the_memory_is_refused_with_the_figure(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(simulated, "available_memory", lambda: 8 * 10**9)
    assert main(["simulate", "--n", "100000", "--d", "3", "--steps", "1", "--out",
                 str(tmp_path / "sim")]) == 2
    err = error_line(capsys)
    assert "n=100000" in err and "160 GB" in err and "8 GB available" in err
    assert not (tmp_path / "sim").exists()
    with pytest.raises(ValueError, match="n=40000 pairs need at least 25.6 GB"):
        optimize_embeddings(lambda u, v: u.sum(), 40000, 3, steps=1)
    with pytest.raises(ValueError, match="n=40000 pairs need at least 12.8 GB"):
        optimize_embeddings(lambda u, v: u.sum(), 40000, 3, steps=1, dtype=torch.float32)
    # the memory of fixed mini-batches is that of one batch
    simulated.check_memory(40000, 3, batch_size=1000)
    monkeypatch.setattr(simulated, "available_memory", lambda: None)  # unknown: no refusal
    simulated.check_memory(100000, 3)


# 8. the file system's refusals are exit status 1, and say what was refused (issue 39)


def test_a_cell_locked_by_another_sweep_advises_another_out(tmp_path, capsys, monkeypatch):
    """A second sweep into the same --out finds the first one's cell locked: the way out is
    another --out (reproduce takes no name=), and in Python another out."""
    import pickle

    from contrastkit.commands import reproduce as reproduce_command
    from contrastkit.experiments import runner
    from contrastkit.train.run_folder import RunFolderInUse, run_lock

    config = tiny_config(tmp_path, epochs=1)
    with run_lock(config.run_dir), pytest.raises(RunFolderInUse) as raised:
        runner._train(config)
    message = str(raised.value)
    assert message.endswith("choose another out") and str(config.run_dir) in message
    assert str(pickle.loads(pickle.dumps(raised.value))) == message  # from a worker process

    def locked(args):
        raise raised.value

    monkeypatch.setattr(reproduce_command, "_run", locked)
    assert main(["reproduce", "similarities/table1"]) == 1
    err = error_line(capsys)
    assert "is in use by another run" in err and err.endswith("choose another --out\n")


def test_resume_in_a_read_only_run_folder_says_it_cannot_write_there(tmp_path, capsys,
                                                                     monkeypatch):
    import builtins
    import errno

    import contrastkit.train.run_folder as run_folder

    config = fake_run(tmp_path, None, previous=True)

    def read_only(path, mode="r", *args, **kwargs):  # what chmod 555 does to all but root
        if set(mode) & set("wax+"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return builtins.open(path, mode, *args, **kwargs)

    monkeypatch.setattr(run_folder, "open", read_only, raising=False)
    assert main(["pretrain", f"runs_dir={tmp_path}", "name=tiny", "--resume"]) == 1
    err = error_line(capsys)
    assert f"cannot write in the run folder {config.run_dir}: Permission denied" in err
    assert "create" not in err


@pytest.mark.parametrize("command", [["embed", "{run}"], ["embed", "{run}", "--out", "{run}/e.npz"],
                                     ["geometry", "{tmp}/views.npy"]])
def test_an_output_folder_without_write_permission_is_exit_status_1(tmp_path, capsys,
                                                                    monkeypatch, command):
    """As the README says of a permission error (root is never refused, so os.access is told
    to refuse)."""
    import numpy as np

    import contrastkit.commands._paths as paths

    run = tmp_path / "run"
    run.mkdir()
    np.save(tmp_path / "views.npy", np.ones((2, 4, 3)))
    monkeypatch.setattr(paths.os, "access", lambda *args: False)
    assert main([word.format(run=run, tmp=tmp_path) for word in command]) == 1
    err = error_line(capsys)
    assert "cannot be written: no permission to write in" in err


def test_an_unreadable_image_of_a_caption_file_is_exit_status_1(tmp_path, capsys, monkeypatch):
    import errno

    from PIL import Image

    for split in ("train", "test"):
        Image.new("RGB", (8, 8), (9, 99, 199)).save(tmp_path / f"{split}.png")
        (tmp_path / f"{split}.tsv").write_text(f"filepath\ttitle\n{split}.png\ta blue square\n")

    def refuse(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(Image, "open", refuse)
    assert main(["pretrain", f"runs_dir={tmp_path / 'runs'}", "task=image_text",
                 "dataset=captions", f"data_dir={tmp_path}", "device=cpu"]) == 1
    err = error_line(capsys)
    assert f"caption file {tmp_path / 'train.tsv'}, line 2: cannot read image" in err
    assert "Permission denied" in err


# 9. the commands that hints print are quoted for the shell (issue 39)


def _pasted(text: str, start: str) -> list[str]:
    """The words a shell makes of the command in ``text`` that begins with ``start``."""
    command = text[text.index(start):].split("`")[0].split(").")[0].strip()
    return shlex.split(command)


def test_hints_quote_a_path_with_spaces(tmp_path, capsys, monkeypatch):
    import importlib
    import signal
    from types import SimpleNamespace

    from contrastkit.data.vision import load_cifar
    from contrastkit.experiments.run_record import command_line as _command
    from contrastkit.train.stopping import stopped_by

    runs = tmp_path / "sp ace"
    assert main(["pretrain", f"runs_dir={runs}", *SHORT]) == 0
    out = capsys.readouterr().out
    assert _pasted(out, "contrastkit evaluate") == ["contrastkit", "evaluate",
                                                    str(runs / "short")]
    stopped = str(stopped_by(signal.SIGTERM, SimpleNamespace(step=3, epoch=0), 10,
                             runs / "my run"))
    assert _pasted(stopped, "contrastkit pretrain") == [
        "contrastkit", "pretrain", f"runs_dir={runs}", "name=my run", "--resume"]
    with pytest.raises(ValueError) as missing:
        load_cifar("cifar10", tmp_path / "my data", "train")
    assert _pasted(str(missing.value), "contrastkit pretrain")[-1] == (
        f"data_dir={tmp_path / 'my data'}")
    monkeypatch.chdir(tmp_path)  # a run record writes --out relative to the working folder
    recorded = _command("lmcl/fig3", "quick", tmp_path / "an out", 2, None, "local", None)
    assert shlex.split(recorded)[:7] == ["contrastkit", "reproduce", "lmcl/fig3", "--tier",
                                         "quick", "--out", "an out"]
    module = importlib.import_module("contrastkit.experiments.reproduce")  # not the function
    monkeypatch.setattr(module, "publish", lambda out, dest: [])
    assert main(["reproduce", "--publish", str(tmp_path), str(tmp_path / "the dest")]) == 0
    assert _pasted(capsys.readouterr().out, "contrastkit reproduce") == [
        "contrastkit", "reproduce", "--regenerate", str(tmp_path / "the dest")]


# 10. errors name the settings the user typed (issue 39)


@pytest.mark.parametrize("settings, typed, bound", [
    (["loss=siglip", "siglip_scale=1e6"], "siglip_scale=1e+06", "siglip_scale <= 100"),
    (["loss=info_nce", "temperature=0.001"], "temperature=0.001", "temperature >= 0.01"),
])
def test_a_learned_scale_beyond_clip_s_clamp_is_named_by_the_settings_typed(
        tmp_path, capsys, settings, typed, bound):
    assert main(["pretrain", f"runs_dir={tmp_path}", *settings, "learn_temperature=true"]) == 2
    err = error_line(capsys)
    assert f"{typed} with learn_temperature=true" in err and bound in err
    assert "learnable=True" not in err and not list(tmp_path.iterdir())


def test_a_missing_clip_checkpoint_is_named_clip_checkpoint(tmp_path):
    from types import SimpleNamespace

    from contrastkit.train.image_text import build_towers

    config = SimpleNamespace(clip_model="ck-tiny-vit", clip_checkpoint=str(tmp_path / "no.pt"))
    with pytest.raises(ValueError, match=r"^clip_checkpoint must be a local file, got .*no\.pt"):
        build_towers(config, None)


def test_resuming_with_another_loss_names_the_setting_typed_not_the_saved_ones(tmp_path,
                                                                             capsys):
    """The saved siglip_scale would be "ignored" by info_nce, but the user typed loss=: the
    refusal is that a resumed run keeps its loss."""
    config = tiny_config(tmp_path, loss="siglip", siglip_scale=5.0, siglip_bias=0.0, vrns=0.0)
    config.run_dir.mkdir(parents=True)
    (config.run_dir / "config.yaml").write_text(config.to_yaml())
    assert main(["pretrain", f"runs_dir={tmp_path}", "name=tiny", "--resume",
                 "loss=info_nce"]) == 2
    err = error_line(capsys)
    assert "cannot resume with a different config (loss: 'siglip' -> 'info_nce')" in err
    assert "siglip_scale" not in err and "siglip_bias" not in err


# 11. one rule for the whole command line, and what to write instead (issue 39)


@pytest.mark.parametrize("words, advice", [
    (["pretrain", "--epochs", "5"], "--epochs is not an option of pretrain: {rule}; write "
                                    "epochs=5"),
    (["pretrain", "--epochs=5"], "write epochs=5"),
    (["pretrain", "name=x", "--epochs", "5"], "write epochs=5"),
    (["pretrain", "--resume", "--data-dir", "d"], "write data_dir=d"),
    (["pretrain", "--download"], "write download=true"),
    (["pretrain", "name=x", "--overwrit"], "unknown option --overwrit; did you mean "
                                           "--overwrite?"),
    (["evaluate", "RUN", "knn_k=5"], "knn_k=5: evaluate takes no run settings: {rule}; write "
                                     "--knn-k 5"),
    (["evaluate", "RUN", "--knn_k", "5"], "unknown option --knn_k; did you mean --knn-k?"),
    (["reproduce", "lmcl/fig3", "data_dir=d"], "write --data-dir d"),
    (["reproduce", "lmcl/fig3", "overwrite=true"], "write --overwrite\n"),
    (["simulate", "sigmoid-phase", "--n_min", "3"], "simulate sigmoid-phase: error: unknown "
                                                    "option --n_min; did you mean --n-min?"),
])
def test_a_word_a_command_does_not_take_says_what_to_write(tmp_path, capsys, monkeypatch,
                                                           words, advice):
    from contrastkit.commands._spelling import RULE

    monkeypatch.chdir(tmp_path)
    assert main(words) == 2
    err = error_line(capsys)
    assert err.startswith(f"contrastkit {words[0]}") and "usage" not in err
    assert advice.format(rule=RULE) in err
    assert not list(tmp_path.iterdir())


def test_the_rule_is_in_the_help_of_the_command_line_and_of_pretrain(capsys):
    from contrastkit.commands._spelling import RULE

    for words in (["--help"], ["pretrain", "--help"]):
        with pytest.raises(SystemExit):
            main(words)
        assert RULE in " ".join(capsys.readouterr().out.split())


def test_an_unknown_key_suggests_the_closest_one(capsys):
    assert main(["pretrain", "temprature=0.1"]) == 2
    err = error_line(capsys)
    assert "unknown config key temprature (did you mean temperature?)" in err
    assert "valid keys" not in err  # not the 50 keys when one is close
    assert main(["pretrain", "bogus=1"]) == 2
    assert "valid keys: name, runs_dir" in error_line(capsys)


@pytest.mark.parametrize("command", ["evaluate", "embed"])
def test_a_run_folder_that_does_not_exist_is_said_not_to(tmp_path, capsys, command):
    (tmp_path / "digits-simclr-vrns").mkdir()
    missing = tmp_path / "digits-simclr"
    assert main([command, str(missing)]) == 2
    err = error_line(capsys)
    assert (f"RUN {missing} does not exist (did you mean {tmp_path / 'digits-simclr-vrns'}?)"
            in err)
    assert "checkpoint" not in err
