"""Builds a Hugging Face Hub cache on disk, laid out exactly as huggingface_hub's downloads leave it, from local
files (tests never download):

    <cache>/models--<org>--<name>/blobs/<etag>                  the file contents (etag: sha256 for LFS files
                                                                 such as *.safetensors, the git blob sha1 else)
    <cache>/models--<org>--<name>/refs/<branch or tag>          the commit hash, no newline
    <cache>/models--<org>--<name>/snapshots/<commit>/<file>     a relative symlink to ../../blobs/<etag>
"""

from __future__ import annotations

import hashlib
import os
import pathlib

LFS_SUFFIXES = (".safetensors", ".bin", ".h5", ".msgpack")


def repo_folder(cache, repo_id: str) -> pathlib.Path:
    return pathlib.Path(cache) / ("models--" + repo_id.replace("/", "--"))


def commit_hash(seed: str) -> str:
    """A 40-hex-digit commit id (what the Hub's refs hold)."""
    return hashlib.sha1(seed.encode()).hexdigest()


def write_snapshot(
    cache, repo_id: str, files: dict[str, bytes | str | os.PathLike], commit: str, refs: tuple[str, ...] = ("main",)
) -> pathlib.Path:
    """Adds one snapshot (`files`: name -> bytes or a path to copy) of `repo_id` at `commit`, pointed to by each
    of `refs`; returns the snapshot directory."""
    repo = repo_folder(cache, repo_id)
    snapshot = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        data = content if isinstance(content, bytes) else pathlib.Path(content).read_bytes()
        if name.endswith(LFS_SUFFIXES):
            etag = hashlib.sha256(data).hexdigest()
        else:
            etag = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        (repo / "blobs" / etag).write_bytes(data)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(repo / "blobs" / etag, link.parent))
    for ref in refs:
        (repo / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (repo / "refs" / ref).write_text(commit)
    return snapshot
