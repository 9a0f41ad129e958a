"""kbl-fill-mask: texts from arguments or standard input, a table per text or JSON lines equal to Hugging Face's
fill-mask pipeline (fill_mask_goldens.json); a text without [MASK] and a missing vocabulary are one error line
naming them, before the model loads."""

import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from keras_bert_lite.runners import fill_mask
from tests.conftest import GOLDEN_DIR

GOLDEN = json.loads((GOLDEN_DIR / "fill_mask_goldens.json").read_text(encoding="utf-8"))
EXPECTED = GOLDEN["models"]["hf_tiny_masked_lm"]
MODEL = str(GOLDEN_DIR / "hf_tiny_masked_lm")


def stdin_of(monkeypatch, text: str):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8"))))


def error_line(argv, capsys):
    with pytest.raises(SystemExit) as raised:
        fill_mask.main(argv)
    message = raised.value.code
    assert isinstance(message, str) and "Traceback" not in capsys.readouterr().err, message
    return message


def test_json_lines_from_standard_input_are_the_pipelines(monkeypatch, capsys):
    stdin_of(monkeypatch, "\n".join(GOLDEN["texts"][:3]).replace("\n", "\n \n") + "\n")  # blank lines skipped
    fill_mask.main(["--model", MODEL, "--json"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["text"] for line in lines] == GOLDEN["texts"][:3]
    for line, masks in zip(lines, EXPECTED):
        assert [m["token_ids"] for m in line["masks"]] == [[p["token"] for p in mask] for mask in masks]
        assert [m["tokens"] for m in line["masks"]] == [[p["token_str"] for p in mask] for mask in masks]
        scores = np.array([m["scores"] for m in line["masks"]])
        assert np.abs(scores - [[p["score"] for p in mask] for mask in masks]).max() <= 1e-5
    assert [m["position"] for m in lines[1]["masks"]] == [4, 6]


def test_the_table_has_a_column_per_mask_and_a_row_per_rank(capsys):
    fill_mask.main(["--model", MODEL, "--top_k", "2", GOLDEN["texts"][1]])
    lines = capsys.readouterr().out.splitlines()
    first, second = EXPECTED[1]
    assert lines[0] == GOLDEN["texts"][1]
    assert lines[1].split() == ["rank", "[MASK]", "1", "(position", "4)", "[MASK]", "2", "(position", "6)"]
    for rank in (0, 1):
        assert lines[2 + rank].split() == [
            str(rank + 1),
            first[rank]["token_str"],
            f"{first[rank]['score']:.4f}",
            second[rank]["token_str"],
            f"{second[rank]['score']:.4f}",
        ]
    assert lines[4:] == [""]


@pytest.mark.parametrize(
    "argv, stdin, says",
    [
        (
            ["a [MASK]", "no mask"],
            "",
            "error: text 2 ('no mask') holds no [MASK]: put [MASK] where a token is to be predicted.",
        ),
        (
            [],
            "a [MASK]\n\nthe [mask] is text\n",
            "error: line 3 of standard input ('the [mask] is text') holds no [MASK]",
        ),
        ([], "\n  \n", "error: no texts: give them as arguments or one per line on standard input"),
    ],
)
def test_a_text_without_a_mask_is_named_before_the_model_loads(monkeypatch, capsys, argv, stdin, says):
    stdin_of(monkeypatch, stdin)
    monkeypatch.setattr(fill_mask, "fill_mask", lambda *a, **k: pytest.fail("the model was loaded"))
    assert error_line(["--model", MODEL, *argv], capsys).startswith(says)


def test_the_vocabulary_and_top_k_are_checked_with_the_flags_names(capsys):
    pretraining = str(GOLDEN_DIR / "hf_tiny_pretraining")
    assert error_line(["--model", pretraining, "a [MASK]"], capsys).startswith(
        "error: --vocab is required: no vocab.txt or tokenizer.json beside --model."
    )
    assert error_line(["--model", MODEL, "--top_k", "121", "a [MASK]"], capsys) == (
        f"error: --top_k 121 is more than the 120 tokens of {MODEL}/vocab.txt."
    )
    assert "--lower_case false contradicts the vocabulary" in error_line(
        ["--model", MODEL, "--lower_case", "false", "a [MASK]"], capsys
    )


def test_a_checkpoint_without_a_masked_lm_head_is_one_error_line(tmp_path, capsys):
    shutil.copytree(MODEL, tmp_path / "hf")
    weights = str(tmp_path / "hf" / "model.safetensors")
    save_file({k: v for k, v in load_file(weights).items() if not k.startswith("cls.")}, weights)
    assert error_line(["--model", str(tmp_path / "hf"), "a [MASK]"], capsys).startswith(
        f"error: {tmp_path / 'hf'}: the checkpoint (BertForMaskedLM) has no masked-LM head (cls/predictions); give "
    )


def test_the_console_script_prints_the_table_and_nothing_else(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "kbl-fill-mask"),
            "--model",
            MODEL,
            "--vocab",
            os.path.join(MODEL, "vocab.txt"),
            GOLDEN["texts"][0],
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.splitlines()[2].split()[:2] == ["1", EXPECTED[0][0][0]["token_str"]]
