"""A resumed run compares the contents of the files its settings name (`runners.input_digests`, `check_inputs`):
a file changed in place, added to a glob or a directory, or removed is refused by setting and file name; the
same files spelt or placed otherwise are no change; a large file is compared by its size and samples."""

import dataclasses
import os
import shutil

import pytest

from keras_bert_lite.runners import input_digests as digests_module
from keras_bert_lite.runners.errors import SettingsError
from keras_bert_lite.runners.flags import flag
from keras_bert_lite.runners.input_digests import input_digests, input_settings
from keras_bert_lite.runners.resume import check_inputs, save_inputs


@dataclasses.dataclass
class Job:
    data: str = flag("", input_path=True)
    corpus: str = flag("", input_path=True)
    init: str = flag("", input_path=True)
    name: str = flag("")


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_only_input_path_flags_are_digested():
    assert input_settings(Job()) == ["data", "corpus", "init"]


def test_the_same_files_spelt_or_placed_otherwise_have_the_same_digests(tmp_path, monkeypatch):
    write(tmp_path / "a" / "train.tsv", "x\t1\n")
    write(tmp_path / "a" / "corpus" / "1.txt", "one\n")
    write(tmp_path / "a" / "corpus" / "2.txt", "two\n")
    here = input_digests(Job(data=str(tmp_path / "a" / "train.tsv"), corpus=str(tmp_path / "a" / "corpus" / "*")))
    assert set(here) == {"data", "corpus"} and set(here["corpus"]) == {"1.txt", "2.txt"}
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    monkeypatch.chdir(tmp_path / "b")
    assert input_digests(Job(data="train.tsv", corpus="corpus/1.txt,corpus/2.txt")) == here


def test_a_name_that_is_no_local_file_is_not_digested():
    assert input_digests(Job(init="google-bert/bert-base-uncased", name="x")) == {}


def test_changed_added_and_removed_files_are_refused_by_setting_and_name(tmp_path):
    train = write(tmp_path / "train.tsv", "good movie\t1\n")
    folder = tmp_path / "init"
    write(folder / "vocab.txt", "[PAD]\n")
    write(folder / "config.json", "{}\n")
    job = Job(data=train, init=str(folder))
    save_inputs(str(tmp_path), input_digests(job))
    check_inputs(str(tmp_path), input_digests(job))  # unchanged: resumes

    write(tmp_path / "train.tsv", "good movie\t0\n")  # a label fixed in place
    (folder / "config.json").unlink()
    write(folder / "tokenizer.json", "{}\n")
    with pytest.raises(SettingsError) as error:
        check_inputs(str(tmp_path), input_digests(job))
    assert (
        "(--data: train.tsv changed; --init: config.json removed, tokenizer.json added). Restore the files, use "
        "a new --model_dir" in str(error.value)
    ) and str(error.value).endswith("--allow_flag_change data,init.")
    with pytest.raises(SettingsError, match=r"\(--data: train.tsv changed\)"):
        check_inputs(str(tmp_path), input_digests(job), allowed=("init",))


def test_an_accepted_change_is_said(tmp_path, caplog):
    train = write(tmp_path / "train.tsv", "good movie\t1\n")
    save_inputs(str(tmp_path), input_digests(Job(data=train)))
    write(tmp_path / "train.tsv", "good movie\t0\n")
    check_inputs(str(tmp_path), input_digests(Job(data=train)), allowed=("data",))
    assert "Resuming with --data's files changed (train.tsv changed), as --allow_flag_change accepts." in caplog.text


def test_a_run_without_inputs_json_is_not_compared(tmp_path):
    check_inputs(str(tmp_path), input_digests(Job(data=write(tmp_path / "t.tsv", "x\n"))))


def test_a_large_file_is_compared_by_its_size_and_samples(tmp_path, monkeypatch):
    monkeypatch.setattr(digests_module, "FULL_DIGEST_BYTES", 1000)
    monkeypatch.setattr(digests_module, "SAMPLE_BYTES", 10)
    monkeypatch.setattr(digests_module, "SAMPLES", 3)  # windows at 0, 1995 and 3990 of 4000
    path = tmp_path / "corpus.txt"
    data = bytearray(b"a" * 4000)
    path.write_bytes(data)
    first = digests_module.file_digest(str(path))
    assert first.startswith("sampled-sha256:")

    def digest_after(offset):
        edited = bytearray(data)
        edited[offset] = ord("b")
        path.write_bytes(edited)
        os.utime(path, ns=(1, os.stat(path).st_mtime_ns + 1))  # a new version, whatever the clock
        return digests_module.file_digest(str(path))

    assert digest_after(1999) != first and digest_after(3999) != first
    assert digest_after(1000) == first  # between windows: unseen, as documented
    path.write_bytes(data + b"a")
    assert digests_module.file_digest(str(path)) != first  # another size
