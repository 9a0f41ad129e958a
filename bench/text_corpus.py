"""Real multilingual text lines for tokenizer parity measurement and vocabulary training (never needed by tests).

Sources, all installable offline here:
  - English: the Python documentation topics shipped with CPython (`pydoc_data.topics`);
  - Debian manual pages in de, es, fr, ru, cs, pl, ja, zh_CN, zh_TW (manpages-* packages): raw troff source lines,
    bytes as shipped (a few are not UTF-8: good tests of invalid input);
  - Debian's iso-codes translations (.mo catalogs, ~160 languages incl. Greek, Arabic, Hindi, Thai, Korean).
Debian packages are fetched with `apt-get download` and unpacked with `dpkg -x` into a cache directory.

    python bench/text_corpus.py /tmp/kbl_text_corpus.txt      # writes one line per line, deterministically
"""

from __future__ import annotations

import argparse
import gettext
import gzip
import pathlib
import random
import subprocess

PACKAGES = (
    "manpages-de",
    "manpages-es",
    "manpages-fr",
    "manpages-ru",
    "manpages-cs",
    "manpages-pl",
    "manpages-ja",
    "manpages-zh",
    "iso-codes",
)
CACHE = pathlib.Path("/tmp/kbl_text_corpora")  # the unpacked Debian packages, kept between runs
PER_SOURCE = 4000
MAN_LANGUAGES = ("de", "es", "fr", "ru", "cs", "pl", "ja", "zh_CN", "zh_TW")


def unpack_debian_packages(cache: pathlib.Path) -> pathlib.Path:
    """Downloads and unpacks PACKAGES into `cache`/root once; returns that root."""
    root = cache / "root"
    if (root / "usr/share/iso-codes").exists():
        return root
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", *PACKAGES], cwd=debs, check=True)
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
    return root


def python_docs_lines() -> list[bytes]:
    from pydoc_data.topics import topics

    return [line.encode() for key in sorted(topics) for line in topics[key].split("\n")]


def man_page_lines(root: pathlib.Path, language: str) -> list[bytes]:
    lines = []
    for page in sorted((root / "usr/share/man" / language).rglob("*.gz")):
        lines.extend(gzip.decompress(page.read_bytes()).split(b"\n"))
    return lines


def iso_codes_lines(root: pathlib.Path) -> list[bytes]:
    lines = []
    for catalog in sorted((root / "usr/share/locale").rglob("*.mo")):
        with open(catalog, "rb") as f:
            messages = gettext.GNUTranslations(f)._catalog  # msgid → msgstr
        lines.extend(value.encode() for key, value in sorted(messages.items(), key=str) if key and value)
    return lines


def corpus(cache: pathlib.Path, per_source: int, seed: int = 0) -> dict[str, list[bytes]]:
    """Per source, up to `per_source` distinct non-blank lines, sampled deterministically."""
    root = unpack_debian_packages(cache)
    sources = {"en_python_docs": python_docs_lines()}
    sources.update({f"man_{language}": man_page_lines(root, language) for language in MAN_LANGUAGES})
    sources["iso_codes_160_languages"] = iso_codes_lines(root)
    sampled = {}
    for name, lines in sources.items():
        unique = sorted(set(line for line in lines if line.strip()))
        random.Random(seed).shuffle(unique)
        sampled[name] = unique[:per_source]
    return sampled


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", type=pathlib.Path, help="where to write the lines (bytes, one per line)")
    parser.add_argument("--cache", type=pathlib.Path, default=CACHE)
    parser.add_argument("--per-source", type=int, default=PER_SOURCE)
    args = parser.parse_args()
    sources = corpus(args.cache, args.per_source)
    with open(args.output, "wb") as f:
        for lines in sources.values():
            f.write(b"".join(line + b"\n" for line in lines))
    for name, lines in sources.items():
        print(f"{name:26s} {len(lines):6d} lines")
    print(f"{'total':26s} {sum(map(len, sources.values())):6d} lines → {args.output}")


if __name__ == "__main__":
    main()
