"""Per-code-point tables of the reference BERT tokenizer's character predicates, for in-graph lookup.

The reference (google-research/bert `tokenization.py`) decides everything character by character with Python's
`unicodedata`: `_clean_text` drops NUL, U+FFFD and control characters (category Cc or Cf, except tab, newline and
carriage return, which are whitespace) and maps whitespace (those three, space and category Zs) to a space;
`_tokenize_chinese_chars` isolates CJK ideographs of eight code point ranges; `_run_split_on_punc` isolates ASCII
symbols and category P*; `whitespace_tokenize` splits on `str.isspace()`; the uncased mode maps each word through
`str.lower()`, NFD and drops category Mn. We evaluate those very predicates once per code point here and hand the
graph compact tables; the graph never re-implements them. Tables therefore follow the Unicode version of the Python
that builds the tokenizer, exactly like the reference.

Two per-character facts are not per-character in the reference and are handled in the graph:
`str.lower()` maps U+03A3 (capital sigma) to U+03C2 (final sigma) at the end of a word (Unicode's Final_Sigma
context), for which the tables carry the `CASED` and `CASE_IGNORABLE` bits CPython uses; and NFD's canonical
reordering of combining marks, which cannot change the output because every reordered mark that survives accent
stripping would have to be a spacing mark with a non-zero combining class next to another one (none occur in text).

Building the tables probes ~145,000 code points through Python and takes about half a second, which every process
that builds a tokenizer would pay at start. So they are built once per machine and kept in the library's cache
(`cache_dir("unicode")`, a 0.4 MB `.npz`, read in milliseconds), under a name holding the Unicode version and a
digest of this module's source: another Python's tables, or tables built by other code, are never read.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import sys
import unicodedata
import zipfile

import numpy as np

from keras_bert_lite.utils.files import atomic_path, cache_dir

# Character classes (low 3 bits of a property value).
WORD = 0  # part of a word
DROP = 1  # deleted by _clean_text
SPACE = 2  # word separator
PUNCT = 3  # a one-character word (_run_split_on_punc)
CJK = 4  # a one-character word (_tokenize_chinese_chars)
CLASS_MASK = 7
# Final_Sigma context bits (CPython's _PyUnicode_IsCased / _PyUnicode_IsCaseIgnorable, as str.lower() uses them).
CASED = 8
CASE_IGNORABLE = 16
PROPS_MASK = CLASS_MASK | CASED | CASE_IGNORABLE
ROW_SHIFT = PROPS_MASK.bit_length()  # a table value is props | (lower-case row + 1) << ROW_SHIFT: one lookup

CAPITAL_SIGMA = 0x3A3
FINAL_SIGMA = 0x3C2
MAX_EXPANSION = 3  # longest str.lower() + NFD + strip-Mn expansion of one code point (Hangul syllables)

_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


# Unassigned (Cn), private-use (Co) and surrogate (Cs) code points have no case mapping and no decomposition, and
# are neither cased nor case-ignorable: only the others are probed through str.lower() (13% of the range).
_CASELESS_CATEGORIES = ("Cn", "Co", "Cs")


def _classes(cps: np.ndarray, chars: list[str], category: np.ndarray) -> np.ndarray:
    """The reference's predicates, first match wins: dropped, whitespace, CJK, punctuation, else word."""
    tab_nl_cr = (cps == 9) | (cps == 10) | (cps == 13)
    dropped = ~tab_nl_cr & ((cps == 0) | (cps == 0xFFFD) | (category == "Cc") | (category == "Cf"))
    # _is_whitespace, plus what str.split() in whitespace_tokenize also splits on (U+2028, U+2029).
    space = (cps == 32) | tab_nl_cr | (category == "Zs") | np.fromiter(map(str.isspace, chars), bool, len(chars))
    cjk = np.zeros(len(cps), bool)
    for lo, hi in _CJK_RANGES:
        cjk |= (lo <= cps) & (cps <= hi)
    ascii_symbol = (
        ((33 <= cps) & (cps <= 47))
        | ((58 <= cps) & (cps <= 64))
        | ((91 <= cps) & (cps <= 96))
        | ((123 <= cps) & (cps <= 126))
    )
    punct = ascii_symbol | np.char.startswith(category, "P")
    return np.select([dropped, space, cjk, punct], [DROP, SPACE, CJK, PUNCT], WORD)


BLOCK_BITS = 7  # two-level tables: pages of 128 code points, identical pages stored once


@dataclasses.dataclass(frozen=True)
class UnicodeTables:
    """A two-level table (value = blocks[pages[cp >> BLOCK_BITS] + (cp & 127)]) for fast in-graph gathers.

    A value holds two facts about a code point: its property (`value & PROPS_MASK`: a class `WORD`...`CJK` ORed
    with `CASED` / `CASE_IGNORABLE`) and, for uncased mode, the row of `lower_values` replacing it (`str.lower()`,
    NFD, strip Mn): `(value >> ROW_SHIFT) - 1`, -1 where it stays itself.

    Attributes:
        pages, blocks: int32, the table.
        lower_values: int32 `[M, MAX_EXPANSION]` replacements, padded with -1 (all -1: deleted).
        unicode_version: `unicodedata.unidata_version` the tables were built from.
    """

    pages: np.ndarray
    blocks: np.ndarray
    lower_values: np.ndarray
    unicode_version: str


def _two_level(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Splits `values` [0x110000] into pages of 1 << BLOCK_BITS; returns (page → block offset, unique blocks)."""
    pages = values.astype(np.int32).reshape(-1, 1 << BLOCK_BITS)
    first_of = {}  # a page's bytes -> its block, in order of first use
    index = np.asarray([first_of.setdefault(page.tobytes(), len(first_of)) for page in pages])
    unique = pages[np.unique(index, return_index=True)[1]]
    return (index << BLOCK_BITS).astype(np.int32), unique.reshape(-1)


def _sigma_context_bits(chars: list[str]) -> list[int]:
    """CASED / CASE_IGNORABLE as CPython's Final_Sigma rule sees them, probed through `str.lower()` itself.

    "xΣ" lowers to "xς" iff x is cased and not case-ignorable; "ΑxΣ" does iff x is that or case-ignorable.
    Probes are joined by "\n" (neither cased nor ignorable), so one `lower()` call answers many.
    """
    ends_cased = [p.endswith("\u03c2") for p in "\n".join(ch + "\u03a3" for ch in chars).lower().split("\n")]
    ends_after = [p.endswith("\u03c2") for p in "\n".join("\u0391" + ch + "\u03a3" for ch in chars).lower().split("\n")]
    return [CASED if c else (CASE_IGNORABLE if a else 0) for c, a in zip(ends_cased, ends_after)]


@functools.lru_cache(maxsize=None)
def unicode_tables() -> UnicodeTables:
    """The tables of this Python's `unicodedata`, once per process: from the cache, else built (and cached)."""
    return load_or_build(cache_file())


def cache_file() -> str:
    """Where this Python's tables, built by this module's code, are cached (module docstring)."""
    with open(__file__, "rb") as f:
        code = hashlib.sha256(f.read()).hexdigest()[:16]
    return os.path.join(cache_dir("unicode"), f"tables-{unicodedata.unidata_version}-{code}.npz")


def load_or_build(path: str) -> UnicodeTables:
    """The tables read from `path`, or built and written there (atomically) when it is missing or unreadable.

    A cache that cannot be written (a read-only home) only costs the build at each start.
    """
    try:
        with np.load(path, allow_pickle=False) as saved:
            tables = UnicodeTables(
                pages=saved["pages"],
                blocks=saved["blocks"],
                lower_values=saved["lower_values"],
                unicode_version=str(saved["unicode_version"]),
            )
        if tables.unicode_version == unicodedata.unidata_version and _well_formed(tables):
            return tables
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # missing, damaged, not an .npz: rebuild
        pass
    tables = build_unicode_tables()
    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            np.savez(
                f,
                pages=tables.pages,
                blocks=tables.blocks,
                lower_values=tables.lower_values,
                unicode_version=np.asarray(tables.unicode_version),
            )
    except OSError:
        pass
    return tables


def _well_formed(tables: UnicodeTables) -> bool:
    """Whether every lookup the graph makes stays inside the arrays (a damaged file fails here, not in a gather)."""
    pages, blocks, lower = tables.pages, tables.blocks, tables.lower_values
    return (
        pages.dtype == blocks.dtype == lower.dtype == np.int32
        and lower.ndim == 2
        and lower.shape[1] == MAX_EXPANSION
        and pages.shape == ((sys.maxunicode + 1) >> BLOCK_BITS,)
        and blocks.ndim == 1
        and len(blocks) % (1 << BLOCK_BITS) == 0
        and pages.min() >= 0
        and pages.max() + (1 << BLOCK_BITS) <= len(blocks)
        and ((blocks >> ROW_SHIFT) - 1).max() < len(lower)
    )


def build_unicode_tables() -> UnicodeTables:
    """Builds the tables from this Python's `unicodedata` (about half a second)."""
    props, lower_rows, replacements = [], np.full(sys.maxunicode + 1, -1, np.int32), []
    block = 1 << 16
    for first in range(0, sys.maxunicode + 1, block):
        cps = np.arange(first, first + block)
        # "\n" separates probes below, so it stands in for itself as " " (same class, same mapping: none).
        chars = list(map(chr, range(first, first + block)))
        if first == 0:
            chars[10] = " "
        category = np.asarray(list(map(unicodedata.category, chars)))
        block_props = _classes(cps, chars, category)
        props.append(block_props)
        probed = np.flatnonzero(~np.isin(category, _CASELESS_CATEGORIES))
        if not len(probed):
            continue
        probes = [chars[i] for i in probed]
        block_props[probed] |= np.asarray(_sigma_context_bits(probes), block_props.dtype)
        mapped = _strip_accents("\n".join(probes).lower()).split("\n")
        for j in np.flatnonzero(np.asarray(mapped, object) != np.asarray(probes, object)):
            i = probed[j]
            if block_props[i] & CLASS_MASK not in (DROP, SPACE):
                lower_rows[first + i] = len(replacements)
                replacements.append([ord(c) for c in mapped[j]] + [-1] * (MAX_EXPANSION - len(mapped[j])))
    pages, blocks = _two_level(np.concatenate(props) | (lower_rows + 1) << ROW_SHIFT)
    return UnicodeTables(
        pages=pages,
        blocks=blocks,
        lower_values=np.asarray(replacements, np.int32).reshape(-1, MAX_EXPANSION),
        unicode_version=unicodedata.unidata_version,
    )
