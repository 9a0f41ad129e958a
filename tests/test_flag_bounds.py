"""Every flag checked at the door (issue 56): each numeric and choice flag of each kbl-* command, enumerated from its
job dataclass or its parser (so that a new flag without a range fails here), refuses a value out of its range
before anything is created, with one `error:` line naming the flag and no traceback; the same values given from
Python raise a `SettingsError` naming the flag; the values at the edges of each range are accepted. The library
functions that take such values from users refuse them with a ValueError naming the argument.

Flags that contradict each other (two model sources, half a pair of files) are refused the same way, before the
run directory is created; a run refused once its model is loaded removes the directory it created, and only that.

Most cases run in-process (`main(argv)` / `parse_args`); two run the real console scripts.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import re
import subprocess
import sys
import types

import pytest
import tomllib

from keras_bert_lite import BertConfig
from keras_bert_lite.data.pretraining import pretraining_dataset
from keras_bert_lite.runners import (
    demo,
    embed,
    export,
    fill_mask,
    finetune,
    glue,
    ner,
    pairs,
    pretrain,
    squad,
    swag,
    vocab,
)
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.flags import build_parser, check_flags, distinct_integers, option_names, parse_job
from keras_bert_lite.serving import client_cli
from keras_bert_lite.serving import flags as serve_flags
from keras_bert_lite.training.optimization import create_optimizer

REPO = pathlib.Path(__file__).resolve().parent.parent
BIN = os.path.dirname(sys.executable)


@dataclasses.dataclass(frozen=True)
class Command:
    """A runner command: its job class, its entry point, and the flags it requires as a function of a scratch
    directory (what the command writes goes to <scratch>/run)."""

    job: type
    main: object
    required: object


def _run_dir(*flags):
    """The required flags of a training command: --model_dir and `flags` (with --preset tiny: one model source)."""
    return lambda tmp: ["--model_dir", str(tmp / "run"), "--preset", "tiny", *flags]


COMMANDS = {
    "kbl-vocab": Command(
        vocab.VocabJob,
        vocab.main,
        lambda tmp: [
            "--input",
            str(tmp / "corpus.txt"),
            "--output",
            str(tmp / "run" / "vocab.txt"),
            "--lower_case",
            "true",
        ],
    ),
    "kbl-pretrain": Command(pretrain.PretrainingJob, pretrain.main, _run_dir("--input_files", "corpus.txt")),
    "kbl-glue": Command(glue.GlueJob, glue.main, _run_dir("--task", "rte")),
    # --max_query_length 4 leaves room for the context at the smallest --seq_length (8).
    "kbl-squad": Command(squad.SquadJob, squad.main, _run_dir("--max_query_length", "4")),
    "kbl-ner": Command(ner.NerJob, ner.main, _run_dir()),
    "kbl-swag": Command(swag.SwagJob, swag.main, _run_dir("--train_file", "train.csv", "--dev_file", "dev.csv")),
    "kbl-pairs": Command(pairs.PairsJob, pairs.main, _run_dir("--train_file", "train.csv", "--dev_file", "dev.csv")),
    "kbl-export": Command(
        export.ExportJob,
        export.main,
        lambda tmp: ["--model", str(tmp / "model"), "--model_base_path", str(tmp / "run")],
    ),
    "kbl-demo": Command(demo.DemoJob, demo.main, lambda tmp: ["--runs_dir", str(tmp / "run")]),
    "kbl-fill-mask": Command(
        fill_mask.FillMaskJob, fill_mask.main, lambda tmp: ["--model", str(tmp / "run"), "a [MASK]"]
    ),
    "kbl-embed": Command(
        embed.EmbedJob,
        embed.main,
        lambda tmp: [
            "--model",
            str(tmp / "model"),
            "--input",
            str(tmp / "texts.txt"),
            "--output",
            str(tmp / "run" / "vectors.npy"),
        ],
    ),
}

# The serving commands' own argparse (serving/ imports nothing else of the package): a value out of range of each
# numeric flag. Every numeric flag there must have a type that checks its range (not a bare int or float).
SERVING = {
    "kbl-serve": (
        serve_flags.build_parser,
        lambda tmp: ["--model_name", "m", "--model_base_path", str(tmp)],
        {
            "--model_config_file_poll_wait_seconds": "-1",
            "--allow_version_labels_for_unavailable_models": "maybe",
            "--enable_model_warmup": "maybe",
            "--port": "65536",
            "--max_message_mb": "0",
            "--max_request_examples": "0",
            "--max_request_elements": "-1",
            "--max_string_bytes": "0",
            "--max_request_bytes": "0",
            "--max_concurrent_requests": "0",
            "--poll_seconds": "-1",
            "--load_timeout_seconds": "inf",
            "--max_load_retries": "-1",
            "--max_batch_size": "-1",
            "--batch_timeout_ms": "nan",
            "--rest_api_port": "-1",
            "--rest_api_timeout_in_ms": "-1",
            "--rest_api_max_body_mb": "2048",
            "--rest_api_read_timeout_seconds": "0",
            "--rest_api_max_connections": "0",
        },
    ),
    "kbl-client": (
        client_cli.build_parser,
        lambda tmp: ["--model_name", "m"],
        {"--batch_size": "0", "--timeout": "nan", "--wait": "inf"},
    ),
}

# Numeric flags that admit any finite number.
FINITE_ONLY = {"null_score_diff_threshold"}  # a score difference; the original's examples run from -1 to 5
# The flags a flag is for, where it is refused without them (kbl-glue's and kbl-ner's --doc_stride).
NEEDS = {
    ("kbl-glue", "doc_stride"): ["--long_documents", "windows"],
    ("kbl-ner", "doc_stride"): ["--long_documents", "windows"],
}


def _flag_fields(job):
    return [f for f in dataclasses.fields(job) if "flag" in f.metadata]


def _is_float(field):
    return field.metadata["flag"]["argparse"].get("type") is float


def _is_numeric(field):
    return (
        field.metadata["flag"]["argparse"].get("type") in (int, float, distinct_integers)
        or re.search(r"\b(int|float)\b", str(field.type)) is not None
    )


def _is_choice(field):
    return "choices" in field.metadata["flag"]["argparse"]


def _out_of_range(field):
    """Values just outside the field's range (and nan, inf for a float), as command-line text."""
    if _is_choice(field):
        return ["bogus"]
    bounds, step = field.metadata["flag"]["bounds"], 0.5 if _is_float(field) else 1
    values = [bounds["minimum"] - step] if "minimum" in bounds else []
    values += [bounds["maximum"] + step] if "maximum" in bounds else []
    values += [bounds[name] for name in ("above", "below") if name in bounds]
    return [str(v) for v in values] + (["nan", "inf"] if _is_float(field) else [])


def _at_the_edges(field):
    """The inclusive bounds of the field's range, as command-line text."""
    bounds = field.metadata["flag"]["bounds"]
    return [str(bounds[name]) for name in ("minimum", "maximum") if name in bounds]


def _cases(values_of):
    return [
        pytest.param(name, field.name, value, id=f"{name}-{field.name}={value}")
        for name, command in COMMANDS.items()
        for field in _flag_fields(command.job)
        if _is_numeric(field) or _is_choice(field)
        for value in values_of(field)
    ]


def _field(command, field_name):
    return next(f for f in _flag_fields(COMMANDS[command].job) if f.name == field_name)


def _assert_one_error_line(message, flag):
    assert "Traceback" not in message, message
    errors = [line for line in message.splitlines() if "error:" in line]
    assert len(errors) == 1 and flag in errors[0], message


def test_every_command_is_covered():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) == set(COMMANDS) | set(SERVING)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_numeric_flag_declares_its_range(command):
    for field in filter(_is_numeric, _flag_fields(COMMANDS[command].job)):
        bounds = field.metadata["flag"]["bounds"]
        assert bounds or (field.name in FINITE_ONLY and _is_float(field)), f"--{field.name} declares no range"
    check_flags(COMMANDS[command].job)  # every default is within its own range


@pytest.mark.parametrize("command, field_name, value", _cases(_out_of_range))
def test_a_value_out_of_range_is_one_error_line_and_creates_nothing(
    tmp_path, capsys, monkeypatch, command, field_name, value
):
    # Past the flags the demo would start its stages: stop it there.
    monkeypatch.setattr(demo, "minilm_dir", lambda: sys.exit("the demo went past its flags"))
    spec, field = COMMANDS[command], _field(command, field_name)
    with pytest.raises(SystemExit) as raised:
        spec.main([*spec.required(tmp_path), f"--{field.name}", value])
    code = raised.value.code
    assert code not in (0, None)
    _assert_one_error_line(capsys.readouterr().err + (code if isinstance(code, str) else ""), f"--{field.name}")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("command, field_name, value", _cases(_out_of_range))
def test_the_python_api_refuses_the_same_values(command, field_name, value):
    field = _field(command, field_name)
    python_value = field.metadata["flag"]["argparse"].get("type", str)(value)
    with pytest.raises(SettingsError, match=f"^{re.escape(option_names(field))}: must be .*, got "):
        COMMANDS[command].job(**{field.name: python_value})


@pytest.mark.parametrize("command, field_name, value", _cases(_at_the_edges))
def test_the_edges_of_each_range_are_accepted(tmp_path, command, field_name, value):
    spec = COMMANDS[command]
    job = parse_job(
        spec.job, [*spec.required(tmp_path), *NEEDS.get((command, field_name), []), f"--{field_name}", value]
    )
    assert getattr(job, field_name) == _field(command, field_name).metadata["flag"]["argparse"]["type"](value)


@pytest.mark.parametrize("command", SERVING)
def test_every_numeric_serving_flag_checks_its_range(tmp_path, capsys, command):
    build_parser, required, bad_values = SERVING[command]
    typed = [
        action
        for action in build_parser()._actions
        if action.type is not None and not isinstance(action.type, argparse.FileType)
    ]
    assert {action.option_strings[0] for action in typed} == set(bad_values)
    assert not [action.dest for action in typed if action.type in (int, float)], "a numeric flag without a range"
    for flag, value in bad_values.items():
        with pytest.raises(SystemExit) as raised:
            build_parser().parse_args([*required(tmp_path), flag, value])
        assert raised.value.code == 2
        _assert_one_error_line(capsys.readouterr().err, f"argument {flag}: must be")


def test_the_serving_flags_refuse_through_parse_args(tmp_path, capsys):
    with pytest.raises(SystemExit):
        serve_flags.parse_args(["--model_name", "m", "--model_base_path", str(tmp_path), "--max_batch_size", "-1"])
    assert "argument --max_batch_size: must be >= 0, got -1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        client_cli.parse_args(["--model_name", "m", "--wait", "-1"])
    assert "argument --wait: must be a finite number of seconds >= 0, got -1" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command, flags, expected",
    [
        ("kbl-pretrain", ["--steps", "0"], "kbl-pretrain: error: argument --steps: must be >= 1, got 0"),
        (
            "kbl-glue",
            ["--preset", "huge"],
            "kbl-glue: error: argument --preset: invalid choice: 'huge' (choose from "
            "'tiny', 'mini', 'small', 'medium', 'base', 'large')",
        ),
    ],
)
def test_the_console_script_prints_one_error_line(tmp_path, command, flags, expected):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [os.path.join(BIN, command), "--model_dir", str(tmp_path / "run"), *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 2 and done.stdout == ""
    _assert_one_error_line(done.stderr, expected)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "argument, value",
    [("window_docs", 1), ("shuffle_buffer", 0), ("short_seq_prob", 1.5), ("short_seq_prob", float("nan"))],
)
def test_pretraining_dataset_refuses_its_arguments_out_of_range(argument, value):
    # Checked first, before the documents, tokenizer, packer or masker are touched.
    with pytest.raises(ValueError, match=f"^{argument} must be .*, got {value}"):
        pretraining_dataset(None, None, None, None, **{argument: value})


@pytest.mark.parametrize(
    "argument, value", [("learning_rate", -1e-4), ("learning_rate", float("inf")), ("weight_decay", -0.01)]
)
def test_create_optimizer_refuses_its_arguments_out_of_range(argument, value):
    with pytest.raises(ValueError, match=f"^{argument} must be .*, got {value}"):
        create_optimizer(**{"learning_rate": 1e-4, "total_steps": 10, argument: value})


# Flags that contradict each other, per command: (command, its flags but --model_dir, what the error line names).
CONTRADICTIONS = [
    ("kbl-pretrain", ["--input_files", "c.txt"], "Give exactly one of --init"),
    ("kbl-pretrain", ["--input_files", "c.txt", "--preset", "tiny", "--config", "c.json"], "got --preset and --config"),
    ("kbl-pretrain", ["--preset", "tiny"], "--input_files"),
    ("kbl-pretrain", ["--input_files", "c.txt", "--tfds_name", "wiki", "--preset", "tiny"], "--tfds_name"),
    ("kbl-glue", ["--task", "rte"], "Give exactly one of --init"),
    ("kbl-glue", ["--task", "rte", "--train_file", "t.csv", "--preset", "tiny"], "either --task"),
    ("kbl-glue", ["--train_file", "t.csv", "--preset", "tiny"], "--dev_file is required"),
    ("kbl-glue", ["--task", "rte", "--dev_file", "d.csv", "--preset", "tiny"], "--dev_file/--test_file"),
    ("kbl-glue", ["--task", "mrpc", "--quoting", "none", "--preset", "tiny"], "--quoting is for your own files"),
    (
        "kbl-glue",
        ["--train_file", "t.csv", "--dev_file", "d.csv", "--labels", "1,1.0", "--preset", "tiny"],
        "--labels '1,1.0' names a class twice",
    ),
    ("kbl-squad", ["--train_file", "t.json", "--preset", "tiny"], "--predict_file"),
    ("kbl-squad", ["--seq_length", "32", "--preset", "tiny"], "--seq_length 32 leaves no room"),
    ("kbl-ner", ["--dev_file", "d.txt", "--preset", "tiny"], "--train_file and --dev_file"),
    (
        "kbl-ner",
        ["--long_documents", "windows", "--doc_stride", "126", "--preset", "tiny"],
        "--doc_stride 126 is not smaller than the windows of --seq_length 128 (126 tokens with [CLS] and [SEP]), so "
        "windows would not overlap; give --doc_stride 63 (half a window) or less, or a longer --seq_length.",
    ),
    ("kbl-ner", ["--doc_stride", "32", "--preset", "tiny"], "--doc_stride 32 is for --long_documents windows"),
    (
        "kbl-glue",
        ["--task", "rte", "--long_documents", "windows", "--doc_stride", "63", "--preset", "tiny"],
        "--doc_stride 63 is not smaller than the windows of --seq_length 128 (63 tokens of the second text: 125 less "
        "up to 62 of the first",
    ),
    (
        "kbl-glue",
        ["--task", "rte", "--window_pooling", "max", "--preset", "tiny"],
        "--window_pooling max is for --long_documents windows",
    ),
    (
        "kbl-swag",
        ["--train_file", "t.csv", "--dev_file", "d.csv", "--preset", "tiny", "--init", "x"],
        "got --init and --preset",
    ),
    (
        "kbl-pairs",
        ["--train_file", "t.csv", "--dev_file", "d.csv", "--anchor", "q", "--positive", "q", "--preset", "tiny"],
        "--anchor and --positive both name the column 'q'",
    ),
    (
        "kbl-export",
        ["--model", "m", "--target", "hf", "--version", "3", "--keep", "2"],
        "--target hf does not use --version, --keep",
    ),
    ("kbl-export", ["--model", "m", "--target", "tf-hub", "--labels", "a,b"], "--target tf-hub does not use --labels"),
]


def _run_dir_flag(command, tmp_path):
    return ["--model_base_path" if command == "kbl-export" else "--model_dir", str(tmp_path / "run")]


@pytest.mark.parametrize(
    "command, flags, named",
    CONTRADICTIONS,
    ids=[f"{c}-{'-'.join(f.lstrip('-') for f in flags)}" for c, flags, _ in CONTRADICTIONS],
)
def test_contradicting_flags_are_one_error_line_and_create_nothing(tmp_path, capsys, command, flags, named):
    with pytest.raises(SystemExit) as raised:
        COMMANDS[command].main([*_run_dir_flag(command, tmp_path), *flags])
    assert raised.value.code == 2
    _assert_one_error_line(capsys.readouterr().err, named)
    assert not (tmp_path / "run").exists()
    settings = vars(build_parser(COMMANDS[command].job, "").parse_args([*_run_dir_flag(command, tmp_path), *flags]))
    with pytest.raises(SettingsError, match=re.escape(named)):  # from Python: when the job is constructed
        COMMANDS[command].job(**settings)


def _error_line_of(main, argv, capsys):
    """The one line a command that refuses its settings at run time exits with (status 1)."""
    with pytest.raises(SystemExit) as raised:
        main(argv)
    message = raised.value.code
    assert isinstance(message, str) and message.startswith("error: ") and "\n" not in message, message
    assert "Traceback" not in capsys.readouterr().err
    return message


def test_a_run_refused_once_its_model_is_loaded_leaves_no_new_directory(tmp_path, capsys, uncased_vocab_path):
    config = tmp_path / "config.json"
    BertConfig(
        vocab_size=30522, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64, max_position_embeddings=16
    ).to_json(config)
    (tmp_path / "corpus.txt").write_text("One sentence.\nAnother one.\n\nA second document.\nIts end.\n")
    argv = [
        "--input_files",
        str(tmp_path / "corpus.txt"),
        "--vocab",
        uncased_vocab_path,
        "--config",
        str(config),
        "--seq_length",
        "32",
    ]
    message = _error_line_of(pretrain.main, [*argv, "--model_dir", str(tmp_path / "runs" / "run")], capsys)
    assert "--seq_length 32 is longer than the 16 positions of the model" in message
    assert not (tmp_path / "runs").exists()  # the run directory, its lock and the parent made for it
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("my notes")
    _error_line_of(pretrain.main, [*argv, "--model_dir", str(tmp_path / "mine")], capsys)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "my notes"  # the user's directory is kept


def test_a_batch_the_replicas_cannot_share_leaves_no_new_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(finetune, "resolve_strategy", lambda name, tpu: types.SimpleNamespace(num_replicas_in_sync=3))
    message = _error_line_of(glue.main, [*COMMANDS["kbl-glue"].required(tmp_path), "--batch_size", "32"], capsys)
    assert message == (
        "error: --batch_size 32 must be a multiple of the 3 replicas: each takes an equal share of every batch."
    )
    assert not (tmp_path / "run").exists()
