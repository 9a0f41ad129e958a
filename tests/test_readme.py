"""The README and the user guides in docs/, as users read them.

Every block marked `<!-- readme-test: run -->` in README.md or docs/*.md runs as written, a document's blocks in
order in one fresh directory, and what they print is checked (RUNS below). The README stays a short front page:
at most README_LIMIT bytes, one line per command, a link to every guide; every relative link resolves."""

import ast
import glob
import json
import os
import re
import subprocess
import sys

import pytest

import keras_bert_lite

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKED_BLOCK = re.compile(r"<!-- readme-test: run -->\n```(python|bash)\n(.*?)```", re.S)
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
FENCED = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"\]\(([^)\s]+)\)")
README_LIMIT = 15_000  # bytes; the detail goes into a guide in docs/, benchmark detail into bench/README.md


def check_readme(outputs, cwd):
    assert (cwd / "exports" / "sentiment" / "1" / "saved_model.pb").exists()
    assert "keras_bert_lite 0.1.0" in outputs[1]
    assert '"text": "what a wonderful film", "label": ' in outputs[1]


def check_embeddings(outputs, cwd):
    assert outputs[0].splitlines()[0].endswith(" A man is eating a piece of bread.")  # the meal's nearest


def check_serving(outputs, cwd):
    lines = outputs[1].splitlines()
    assert json.loads(lines[0])["model_version_status"][0]["state"] == "AVAILABLE"
    rows = json.loads(lines[1])["predictions"]
    assert len(rows) == 2 and sorted(rows[0]) == ["label", "label_id", "logits", "probabilities"]
    assert sorted(json.loads(lines[2])["outputs"]) == ["label", "label_id", "logits", "probabilities"]
    assert [label for label, _ in json.loads(lines[3])["results"][0]] == ["negative", "positive"]
    assert lines[4].startswith('{"model_spec": {"name": "reviews"')
    assert (
        ':tensorflow:serving:request_count{API="Predict",entrypoint="REST",model_name="reviews",status="OK",'
        'version="1"} 2.0'
    ) in lines[5:]


# Each document with marked blocks: their languages in order, and the check of their outputs (stdout per block).
RUNS = {
    "README.md": (("python", "bash"), check_readme),  # the 30-second fine-tune + export; audit, serve, client
    "docs/embeddings.md": (("python",), check_embeddings),  # semantic search with all-MiniLM-L6-v2
    "docs/serving.md": (("python", "bash"), check_serving),  # an export served over REST, called with curl
}


def documents():
    guides = sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
    return ["README.md"] + [os.path.relpath(path, REPO).replace(os.sep, "/") for path in guides]


def read(document):
    with open(os.path.join(REPO, document), encoding="utf-8") as f:
        return f.read()


def marked_blocks(document):
    return MARKED_BLOCK.findall(read(document))


def anchors(document):
    """GitHub's heading ids: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", FENCED.sub("", read(document)), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def relative_links(document):
    """(target document, anchor or "") of each relative link, the target as a path from the repository root."""
    for target in LINK.findall(FENCED.sub("", read(document))):
        if not re.match(r"[a-z]+:", target):
            path, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(document), path)) if path else document
            yield path.replace(os.sep, "/"), anchor


def section(text, heading):
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_is_short_and_lists_every_command_and_guide():
    text = read("README.md")
    assert "make demo" in text and "make test" in text
    size = len(text.encode("utf-8"))
    assert size <= README_LIMIT, f"README.md is {size} bytes (at most {README_LIMIT}): move detail into docs/"
    commands = re.findall(r"^(kbl-[\w-]+) = ", read("pyproject.toml"), re.M)
    assert commands, "no kbl-* commands found in pyproject.toml's [project.scripts]"
    listed = section(text, "Commands")
    assert [command for command in commands if f"`{command}`" not in listed] == []
    linked = {path for path, _ in relative_links("README.md") if path.startswith("docs/")}
    unmatched = sorted(linked ^ set(documents()[1:]))
    assert unmatched == [], "the README links each guide in docs/, and only guides that exist"


@pytest.mark.parametrize("document", documents())
def test_relative_links_reach_a_file_and_heading(document):
    for path, anchor in relative_links(document):
        assert os.path.exists(os.path.join(REPO, path)), f"{document}: no file {path}"
        if anchor and path.endswith(".md"):
            assert anchor in anchors(path), f"{document}: no heading #{anchor} in {path}"


@pytest.mark.parametrize("document", documents())
def test_each_documents_marked_blocks_have_a_check(document):
    languages = tuple(language for language, _ in marked_blocks(document))
    assert languages == RUNS.get(document, ((), None))[0], f"{document}: update RUNS for its marked blocks"


def deep_names(code):
    """What a block of Python takes from keras_bert_lite other than its `__all__`: `from keras_bert_lite.<sub>
    import`, `import keras_bert_lite.<sub>`, and names of the package (as `kbl`, its alias everywhere) not in
    `__all__`."""
    aliases, found = {"kbl"}, []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("keras_bert_lite.")]
            aliases |= {alias.asname or alias.name for alias in node.names if alias.name == "keras_bert_lite"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("keras_bert_lite"):
            found += [
                f"from {node.module} import {alias.name}"
                for alias in node.names
                if node.module != "keras_bert_lite" or alias.name not in keras_bert_lite.__all__
            ]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            found += [] if node.attr in keras_bert_lite.__all__ else [f"{node.value.id}.{node.attr}"]
    return found


@pytest.mark.parametrize("document", documents())
def test_python_blocks_use_only_the_public_api(document):
    blocks = PYTHON_BLOCK.findall(read(document))
    deep = [name for code in blocks for name in deep_names(code)]
    assert deep == [], f"{document}: {deep}; use `kbl.<name>` from keras_bert_lite.__all__ (add it there if public)"


@pytest.mark.slow
@pytest.mark.parametrize("document", sorted(RUNS))
def test_marked_blocks_run_verbatim(document, tmp_path):
    bin_dir = os.path.dirname(sys.executable)  # the venv: `python` and the kbl-* commands
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], TF_CPP_MIN_LOG_LEVEL="2")
    outputs = []
    for language, code in marked_blocks(document):
        command = [sys.executable, "-c", code] if language == "python" else ["bash", "-e", "-o", "pipefail", "-c", code]
        out = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == 0, f"{language} block failed:\n{code}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        outputs.append(out.stdout)
    RUNS[document][1](outputs, tmp_path)
