"""Config loading, ``--set`` overrides and schema validation (no training)."""
# ruff: noqa: E402  (the imports below need typer, skipped above when missing)

from __future__ import annotations

import pytest

pytest.importorskip("typer", reason="the CLI needs typer (pip install -e '.[dev]')")

from nnkit.cli.config import apply_overrides, did_you_mean, load_config, parse_yaml, validate
from nnkit.cli.errors import ConfigError
from tests.cli.conftest import TINY, write_config


def test_defaults_are_filled_in(workdir):
    config = load_config(
        write_config(workdir, {"data": {"name": "moons"}, "model": {"layers": ["ReLU"]}}, "m.yaml")
    )
    assert config["train"] == {
        "epochs": 10,
        "verbose": 2,
        "stop_on_nonfinite": True,
        "jit_compile": "auto",
    }
    assert config["data"]["batch_size"] == 32 and config["data"]["noise"] == 0.1
    assert config["optimizer"] == {"name": "adam"}
    assert config["model"]["layers"] == [{"type": "ReLU"}]
    assert config["output"]["dir"] == "runs/m"
    assert config["callbacks"] == [] and config["metrics"] == []


def test_overrides_are_yaml_typed():
    config = apply_overrides(
        TINY,
        [
            "train.epochs=3",
            "optimizer.lr=1e-3",
            "model.layers[0].units=8",
            "model.layers.2.units=5",
            "data.shuffle=false",
            "metrics=[accuracy, mae]",
        ],
    )
    assert config["train"]["epochs"] == 3
    assert config["optimizer"]["lr"] == pytest.approx(1e-3)
    assert [layer.get("units") for layer in config["model"]["layers"]] == [8, None, 5]
    assert config["data"]["shuffle"] is False
    assert config["metrics"] == ["accuracy", "mae"]
    assert TINY["train"]["epochs"] == 1  # the original is untouched


def test_override_creates_missing_and_null_sections():
    config = apply_overrides(
        {**TINY, "scheduler": None}, ["scheduler.name=ExponentialLR", "callbacks=[]"]
    )
    assert config["scheduler"] == {"name": "ExponentialLR"}
    config = apply_overrides({"data": {}}, ["train.epochs=2"])
    assert config["train"] == {"epochs": 2}


@pytest.mark.parametrize(
    "override, path",
    [
        ("train.epochs", "--set"),
        ("=3", "--set"),
        ("train..epochs=3", "--set"),
        ("model.layers[9].units=3", "model.layers[9]"),
        ("loss.name=mse", "loss"),
        ("train.epochs=[1", "--set train.epochs"),
    ],
)
def test_bad_overrides_name_the_problem(override, path):
    with pytest.raises(ConfigError) as info:
        apply_overrides(TINY, [override])
    assert info.value.path == path


def test_scientific_notation_is_a_float():
    assert parse_yaml("lr: 1e-3", "x") == {"lr": 0.001}
    assert parse_yaml("v: 1.5E+2", "x") == {"v": 150.0}
    assert parse_yaml("v: e5", "x") == {"v": "e5"}


@pytest.mark.parametrize(
    "override, path, words",
    [
        ("trian.epochs=1", "trian", "did you mean 'train'"),
        ("train.epoch=1", "train.epoch", "did you mean 'epochs'"),
        ("train.epochs=two", "train.epochs", "expected an integer"),
        ("train.epochs=0", "train.epochs", "must be > 0"),
        ("train.verbose=5", "train.verbose", "must be 0"),
        ("data.name=mnist", "data.name", "unknown dataset 'mnist'"),
        ("data.validation_split=1.5", "data.validation_split", "must be in [0, 1)"),
        ("data.shuffle=3", "data.shuffle", "expected true or false"),
        ("data.path=x.csv", "data.path", "unknown key 'path' for the digits dataset"),
        ("model.layers=[]", "model.layers", "at least one layer"),
        ("model.layers[0]=3", "model.layers[0]", "expected a mapping with 'type'"),
        ("model.input_shape=[8, -1]", "model.input_shape", "positive integers"),
        ("seed=true", "seed", "expected an integer, got a boolean"),
        ("metrics=[3]", "metrics[0]", "expected a metric name"),
        ("optimizer={lr: 0.1}", "optimizer.name", "missing"),
        ("output.checkpoint=a/b.h5", "output.checkpoint", "must be a file name"),
    ],
)
def test_schema_errors_name_the_key(override, path, words):
    with pytest.raises(ConfigError) as info:
        validate(apply_overrides(TINY, [override]))
    assert info.value.path == path
    assert words in str(info.value)
    assert str(info.value).startswith(f"config error: {path}: ")


def test_missing_config_and_bad_yaml(workdir):
    with pytest.raises(ConfigError, match="file not found"):
        load_config(workdir / "absent.yaml")
    (workdir / "bad.yaml").write_text("data: [\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_config(workdir / "bad.yaml")
    (workdir / "list.yaml").write_text("- 1\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(workdir / "list.yaml")


def test_did_you_mean():
    assert did_you_mean("Dense2", ["Dense", "Dropout"]) == " (did you mean 'Dense'?)"
    assert did_you_mean("relu", ["ReLU", "GELU"]) == " (did you mean 'ReLU'?)"
    assert did_you_mean("zzz", ["b", "a"]) == " (expected one of: a, b)"


def test_device_option_replaces_the_config(tiny_config):
    assert load_config(tiny_config, device="cuda:1")["device"] == "cuda:1"
