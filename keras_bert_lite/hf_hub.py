"""Models by name: what a model argument means when it is not a local checkpoint directory or file.

The loader (`kbl.load`, and every function built on it) and every tool's `--init` take, besides a local path:

  * a Hugging Face Hub model name: `bert-base-uncased`, `google-bert/bert-base-uncased`, pinned to a branch,
    tag or commit as `google-bert/bert-base-uncased@<revision>` (or the loaders' `revision=` argument).
    Resolved by `huggingface_hub.snapshot_download` into its cache (`HF_HUB_CACHE`, else `HF_HOME/hub`, else
    ~/.cache/huggingface/hub), fetching only the files a BERT needs (`HUB_FILES`: config, safetensors weights,
    vocabulary and tokenizer settings). With `HF_HUB_OFFLINE=1` only the cache is read, and a model missing
    there is a `ModelNotFoundError` naming the repository, the cache directory and the command that fills it.
    Online, the Hub gets `hub_timeout()` seconds to answer a first metadata request (`_hub_answers`); a Hub that
    does not answer (no network, a dead DNS server, a connection that stalls) counts as offline, so a mistyped name
    fails, and a cached one resolves, within seconds instead of waiting on the network's own timeouts, or forever.
    The legacy names (`bert-base-uncased`, ...) and their `google-bert/` names find each other's cache entry.
  * an original google-research/bert `.zip` archive as released (`uncased_L-12_H-768_A-12.zip`: one directory
    with bert_config.json, bert_model.ckpt.*, vocab.txt), extracted once into `archive_cache_dir()`; its
    directory keeps its name, which records the casing (`text.casing`).

A path that exists always wins over a name. `resolve_model` is the one function that decides; it returns the
local directory (or file) that `checkpoints` and `artifacts` then read as they read any local model.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import threading
import zipfile
import zlib

from huggingface_hub import HfApi, snapshot_download
from huggingface_hub import constants as hub_constants
from huggingface_hub import errors as hub_errors
from huggingface_hub.errors import (
    HfHubHTTPError,
    HFValidationError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from keras_bert_lite.utils.errors import InputFileError
from keras_bert_lite.utils.files import cache_dir

# The files of a Hub repository a BERT needs; everything else (pytorch_model.bin, tf_model.h5, flax, onnx/,
# coreml/) is never downloaded.
HUB_FILES = (
    "config.json",
    "model.safetensors",
    "model-*-of-*.safetensors",
    "model.safetensors.index.json",
    "vocab.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)
LEGACY_ORG = "google-bert"  # bert-base-uncased & co. moved here; the Hub redirects the old names
ARCHIVE_SUFFIX = ".zip"
# Names of archive members that make a model: TF1 checkpoint indexes, safetensors weights, keras_bert_lite files.
_CHECKPOINT_SUFFIXES = (".index", ".safetensors", ".keras")

# A Hub repository id: [org/]name of letters, digits, '-', '_', '.', optionally @revision.
_REPO_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]{0,95}/)?[A-Za-z0-9][\w.-]{0,95}$")
_TRUE = {"1", "ON", "YES", "TRUE"}
# Seconds the Hub gets to answer a model's metadata request, unless HF_HUB_ETAG_TIMEOUT (huggingface_hub's own
# setting for it, 10 s there) says otherwise.
HUB_TIMEOUT = 3.0
# A LocalEntryNotFoundError for a cached snapshot that misses files (huggingface_hub >= 1.x only).
_INCOMPLETE = getattr(hub_errors, "IncompleteSnapshotError", ())


class ModelNotFoundError(FileNotFoundError):
    """A model argument is neither a local path nor a model the Hub (or its cache, offline) has."""


def split_revision(name: str, revision: str | None = None) -> tuple[str, str | None]:
    """`org/name@rev` -> (`org/name`, `rev`); `revision` given as well must agree."""
    repo_id, at, pinned = name.partition("@")
    if at and not pinned:
        raise ValueError(f"{name!r}: empty revision after '@'; write org/name@<branch, tag or commit>.")
    if pinned and revision and pinned != revision:
        raise ValueError(f"{name!r} pins revision {pinned!r} but revision={revision!r} was passed; give one.")
    return repo_id, pinned or revision or None


def is_model_name(text: str) -> bool:
    """Whether `text` reads as a Hub model name (`name`, `org/name`, either with `@revision`), not a path."""
    repo_id = text.partition("@")[0]
    return bool(_REPO_ID.match(repo_id)) and not repo_id.endswith(
        (".keras", ".zip", ".json", ".txt", ".index", ".safetensors", ".ckpt")
    )


def looks_like_path(text: str) -> bool:
    """Whether `text`, even if it also reads as a model name, was likely meant as a local path: it starts with
    `./`, `../`, `/` or `~`, or it has a directory separator and its first component exists here (`runs/pretrian`
    when `runs/` exists). `google-bert/bert-base-uncased` is not, unless a directory `google-bert` is here."""
    if text.startswith(("./", "../", "~")) or os.path.isabs(text):
        return True
    separators = os.sep + (os.altsep or "")
    first = re.split(f"[{re.escape(separators)}]", text, maxsplit=1)
    return len(first) == 2 and bool(first[0]) and os.path.exists(first[0])


def offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) as set now, or as huggingface_hub read it at import."""
    return (
        any(os.environ.get(v, "").upper() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
        or hub_constants.HF_HUB_OFFLINE
    )


def hub_timeout() -> float:
    """Seconds the Hub gets to answer a model's metadata request: HF_HUB_ETAG_TIMEOUT when set, else HUB_TIMEOUT."""
    return float(os.environ.get("HF_HUB_ETAG_TIMEOUT") or HUB_TIMEOUT)


def _hub_answers(repo_id: str, revision: str | None) -> bool:
    """Whether the Hub answers a metadata request for the model within `hub_timeout()` seconds (any answer: "no
    such model" too). The request runs in a daemon thread that is not waited for after that: its name lookup
    is bounded by no HTTP timeout."""
    answers, done = [], threading.Event()

    def ask():
        try:
            HfApi().model_info(repo_id, revision=revision, timeout=hub_timeout())
            answers.append(True)
        except HfHubHTTPError:  # 401, 404, 5xx: the Hub answered
            answers.append(True)
        except Exception:  # noqa: BLE001 - no network: a connection, name lookup or timeout error of any client
            pass
        finally:
            done.set()

    threading.Thread(target=ask, name="hub-metadata", daemon=True).start()
    done.wait(hub_timeout())
    return bool(answers)


def hub_cache_dir() -> str:
    """huggingface_hub's cache directory as the environment says now (HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE,
    HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub: its own order)."""
    env = os.environ
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"), "huggingface")
    path = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home, "hub")
    return os.path.expandvars(os.path.expanduser(path))


def archive_cache_dir() -> str:
    """Where `.zip` archives are extracted: KERAS_BERT_LITE_CACHE, else XDG_CACHE_HOME (or ~/.cache) /
    keras_bert_lite, each in an `archives/` subdirectory."""
    return cache_dir("archives")


def resolve_model(path: str, revision: str | None = None) -> str:
    """The local directory or file a model argument means.

    Args:
        path: a local path (returned as is; a `.zip` archive is extracted first), or a Hub model name
            (`[org/]name[@revision]`).
        revision: a branch, tag or commit of a Hub model (instead of `@revision`).

    Raises:
        ModelNotFoundError: not a local path, and the Hub (or offline, its cache) has no such model or revision;
            the message says where it looked and how to get the model there, and starts with "no such local path
            <path>" when `path` looks like one (`looks_like_path`: a mistyped run directory).
        InputFileError: a `.zip` archive that cannot be read or holds no checkpoint (`extract_archive`).
    """
    path = os.fspath(path)
    if os.path.exists(path) or os.path.exists(path + ".index"):  # a TF1 prefix names no file itself
        if path.endswith(ARCHIVE_SUFFIX) and os.path.isfile(path):
            return extract_archive(path)
        if revision:
            raise ValueError(f"{path} is a local path; revision={revision!r} applies to Hub model names only.")
        return path
    if not is_model_name(path):
        raise ModelNotFoundError(
            f"{path}: no such file or directory (and not a Hugging Face model name [org/]name[@revision])."
        )
    repo_id, revision = split_revision(path, revision)
    return _snapshot(repo_id, revision, requested=path, path_like=looks_like_path(path))


def _aliases(repo_id: str) -> list[str]:
    """The names a repository may be cached under: the legacy `bert-*` names and their `google-bert/` names."""
    org, _, name = repo_id.rpartition("/")
    if not org and name.startswith("bert-"):
        return [repo_id, f"{LEGACY_ORG}/{name}"]
    if org == LEGACY_ORG:
        return [repo_id, name]
    return [repo_id]


def _snapshot(repo_id: str, revision: str | None, requested: str, path_like: bool = False) -> str:
    """The local snapshot directory of a Hub model (downloaded, or from the cache offline).

    Args:
        repo_id: the repository, `[org/]name`.
        revision: a branch, tag or commit, or None for the default branch.
        requested: the model argument as the user gave it, for messages.
        path_like: `requested` looks like a local path (`looks_like_path`): every message starts with
            "no such local path <requested>, and", so that a mistyped path is recognisable.

    Raises:
        ModelNotFoundError: neither the Hub nor its cache has the model or revision.
    """
    lead = f"no such local path {requested}, and" if path_like else f"{requested}: no such local path, and"
    head = lead if path_like else f"{requested}:"
    cache = hub_cache_dir()
    hub_off = offline()
    local_only = hub_off or not _hub_answers(repo_id, revision)
    where = f"revision {revision!r}" if revision else "its default branch (main)"
    incomplete = None
    for i, candidate in enumerate(_aliases(repo_id)):
        try:
            return snapshot_download(
                candidate,
                revision=revision,
                cache_dir=cache,
                allow_patterns=list(HUB_FILES),
                local_files_only=local_only or i > 0,
            )
        except HFValidationError as error:
            raise ModelNotFoundError(f"{lead} not a valid Hugging Face model name ({error}).") from None
        except RevisionNotFoundError:
            raise ModelNotFoundError(
                f"{head} the Hugging Face model {repo_id} has no revision {revision!r} (a branch, tag or commit)."
            ) from None
        except LocalEntryNotFoundError as error:
            if isinstance(error, _INCOMPLETE):
                incomplete = error
        except RepositoryNotFoundError:
            if i == 0 and not local_only:
                raise ModelNotFoundError(
                    f"{lead} no model {repo_id} on the Hugging Face Hub (a private "
                    "or gated one needs `hf auth login` first)."
                ) from None
    fill = (
        f"`hf download {repo_id}{' --revision ' + revision if revision else ''} --cache-dir {cache} "
        "--include '*.json' --include '*.safetensors' --include vocab.txt`"
    )
    if incomplete is not None:
        raise ModelNotFoundError(
            f"{head} the cached snapshot of {repo_id} in {cache} is incomplete ({incomplete}). Complete it with {fill}."
        ) from None
    if hub_off:
        raise ModelNotFoundError(
            f"{lead} the Hugging Face model {repo_id} ({where}) is not in the cache "
            f"{cache}, which is all HF_HUB_OFFLINE=1 allows. Fill the cache on a machine with network: {fill} "
            "(or run once without HF_HUB_OFFLINE=1), or pass a local directory with config.json and "
            "model.safetensors."
        )
    raise ModelNotFoundError(
        f"{lead} the Hugging Face Hub could not be reached (no answer within "
        f"{hub_timeout():g} s; HF_HUB_ETAG_TIMEOUT gives it longer) and {repo_id} ({where}) "
        f"is not in the cache {cache}; fill it with {fill}, or pass a local directory."
    )


def extract_archive(path: str) -> str:
    """Extracts an original `.zip` archive once into `archive_cache_dir()` (keyed by its path, size and
    modification time) and returns the model directory in it: the archive's single top directory (e.g.
    `uncased_L-12_H-768_A-12`, whose name records the casing), else the extraction root.

    Raises:
        InputFileError: the file is no readable `.zip` archive (a truncated download), or it holds no checkpoint
            (no `*.index`, `*.safetensors` or `.keras` file); nothing is extracted then.
    """
    path = os.path.abspath(path)
    stat = os.stat(path)
    key = hashlib.sha256(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    target = os.path.join(archive_cache_dir(), f"{os.path.basename(path)[: -len(ARCHIVE_SUFFIX)]}-{key}")
    if not os.path.isdir(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".extract-", dir=os.path.dirname(target))
        try:
            try:
                with zipfile.ZipFile(path) as archive:
                    _refuse_without_checkpoint(path, archive.namelist())
                    archive.extractall(tmp)  # member names with '..' or a leading '/' stay inside tmp
            except (zipfile.BadZipFile, EOFError, zlib.error) as error:  # truncated, or damaged member data
                raise InputFileError(
                    f"{path}: not a readable .zip archive ({error}); it may be truncated: download it again."
                ) from None
            try:
                os.rename(tmp, target)
            except OSError:  # another process extracted it first
                if not os.path.isdir(target):
                    raise
        finally:
            if os.path.isdir(tmp):
                shutil.rmtree(tmp, ignore_errors=True)
    entries = [e for e in os.listdir(target) if e != "__MACOSX" and not e.startswith(".")]
    if len(entries) == 1 and os.path.isdir(os.path.join(target, entries[0])):
        return os.path.join(target, entries[0])
    return target


def _refuse_without_checkpoint(path: str, names: list[str]) -> None:
    """Raises InputFileError if the archive `path`, whose members are `names`, holds no model weights, naming a
    few of the files it does hold."""
    files = [n for n in names if not n.endswith("/") and not n.startswith("__MACOSX/")]
    if any(os.path.basename(n).endswith(_CHECKPOINT_SUFFIXES) for n in files):
        return
    held = (
        f"it holds {', '.join(files[:5])}{f' and {len(files) - 5} more files' if len(files) > 5 else ''}"
        if files
        else "it is empty"
    )
    raise InputFileError(
        f"{path}: the archive holds no BERT checkpoint (bert_config.json + bert_model.ckpt.* or "
        f"config.json + *.safetensors), {held}; pass the .zip or directory of a BERT model."
    )
