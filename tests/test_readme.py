"""The README's quick examples, copied verbatim: every block marked `<!-- readme-test: run -->` runs as written."""

import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKED_BLOCK = re.compile(r"<!-- readme-test: run -->\n```(python|bash)\n(.*?)```", re.S)


def readme_blocks():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        return MARKED_BLOCK.findall(f.read())


def test_the_readme_has_the_two_commands_and_quick_blocks():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert "make demo" in text and "make test" in text
    assert [language for language, _ in readme_blocks()] == ["python", "bash", "python"]


@pytest.mark.slow
def test_readme_quick_blocks_run_verbatim(tmp_path):
    """The 30-second Python example (fine-tune + export), then the shell block (audit, serve, client), then the
    semantic search (all-MiniLM-L6-v2)."""
    bin_dir = os.path.dirname(sys.executable)        # the venv: `python` and the kbl-* commands
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], TF_CPP_MIN_LOG_LEVEL="2")
    outputs = []
    for language, code in readme_blocks():
        command = [sys.executable, "-c", code] if language == "python" else ["bash", "-e", "-o", "pipefail", "-c",
                                                                               code]
        out = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == 0, f"{language} block failed:\n{code}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        outputs.append(out.stdout)
    assert (tmp_path / "exports" / "sentiment" / "1" / "saved_model.pb").exists()
    assert "keras_bert_lite 0.1.0" in outputs[1]
    assert '"text": "what a wonderful film", "label": ' in outputs[1]
    assert outputs[2].splitlines()[0].endswith(" A man is eating a piece of bread.")     # the meal's nearest
