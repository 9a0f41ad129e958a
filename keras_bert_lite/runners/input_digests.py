"""The contents of the files a run reads, recorded with its checkpoints and compared when it resumes.

Comparing paths is not enough: a training file whose labels were fixed in place, or a vocabulary with two tokens
swapped, has the same path and another content, and a resumed run would go on from checkpoints trained on the
old one. So every setting whose flag names input files (`flag(..., input_path=True)`: the data, the vocabulary,
the config, the weights to start from) gets a digest per file, saved in `inputs.json` beside `flags.json`.

A setting's files: the file it names; the files directly inside the directory it names; or the files its
comma-separated globs match. A value that names no local file (a Hugging Face model name, a dataset) has none.
Each file is keyed by its path relative to the setting's files' common folder, so the same files spelt or placed
otherwise compare equal. A file up to `FULL_DIGEST_BYTES` is hashed whole; a
larger one (a pretraining corpus shard) by its size and `SAMPLES` evenly spaced windows, so that every start does
not read the whole corpus: an edit that keeps such a file's size and misses every window goes unseen.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os

from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.pretraining import expand_patterns

FULL_DIGEST_BYTES = 256 << 20
SAMPLES = 64
SAMPLE_BYTES = 64 << 10
_CHUNK = 4 << 20


def input_settings(job) -> list[str]:
    """The names of the job's settings whose flags name input files."""
    return [f.name for f in dataclasses.fields(job) if f.metadata.get("flag", {}).get("input_path")]


def input_digests(job) -> dict[str, dict[str, str]]:
    """`{setting: {file key: digest}}` for each input setting of the job that names local files."""
    digests = {}
    for name in input_settings(job):
        files = setting_files(getattr(job, name))
        if files:
            base = os.path.dirname(files[0]) if len(files) == 1 else os.path.commonpath(files)
            digests[name] = {os.path.relpath(path, base): file_digest(path) for path in files}
    return digests


def setting_files(value: str) -> list[str]:
    """The absolute paths of the files a setting's value names (module docstring); [] when it names none."""
    if not value:
        return []
    if os.path.isdir(value):
        paths = [os.path.join(value, name) for name in sorted(os.listdir(value))]
        return [os.path.abspath(p) for p in paths if os.path.isfile(p)]
    try:
        return sorted({os.path.abspath(path) for path in expand_patterns(value)})
    except DataError:
        return []


def file_digest(path: str) -> str:
    """ "sha256:<hex>" of the file, or "sampled-sha256:<hex>" of its size and windows when it is large."""
    stat = os.stat(path)
    return _digest(path, stat.st_size, stat.st_mtime_ns, stat.st_ino)


@functools.lru_cache(maxsize=4096)
def _digest(path: str, size: int, mtime_ns: int, inode: int) -> str:
    """The digest of one version of a file (the cache key holds what a change of its contents changes)."""
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        if size <= FULL_DIGEST_BYTES:
            while chunk := f.read(_CHUNK):
                sha.update(chunk)
            return f"sha256:{sha.hexdigest()}"
        sha.update(str(size).encode())
        for i in range(SAMPLES):
            f.seek(i * (size - SAMPLE_BYTES) // (SAMPLES - 1))
            sha.update(f.read(SAMPLE_BYTES))
    return f"sampled-sha256:{sha.hexdigest()}"


def differences(saved: dict[str, str], new: dict[str, str]) -> list[str]:
    """What changed between two `{file key: digest}` of one setting, e.g. ["train.tsv changed", "b.txt added"]."""
    changed = [f"{key} changed" for key in sorted(set(saved) & set(new)) if saved[key] != new[key]]
    return (
        changed
        + [f"{key} removed" for key in sorted(set(saved) - set(new))]
        + [f"{key} added" for key in sorted(set(new) - set(saved))]
    )
