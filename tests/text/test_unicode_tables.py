"""The per-code-point tables: invariants the graph relies on, and the Final_Sigma probes against str.lower()."""

import os
import sys
import unicodedata

import numpy as np
import pytest

from keras_bert_lite.text import unicode_tables as ut


def _values(t, cps):
    """The table's values for `cps` in numpy (the graph reads them with tf.gather in pretokenize._lookup)."""
    return t.blocks[t.pages[cps >> ut.BLOCK_BITS] + (cps & ((1 << ut.BLOCK_BITS) - 1))]


def _props(t, cps):
    return _values(t, cps) & ut.PROPS_MASK


def _lower_rows(t, cps):
    return (_values(t, cps) >> ut.ROW_SHIFT) - 1


def test_uncased_mapping_never_creates_separators_or_cjk():
    """Classes are read after mapping: a mapped character must keep dropped/space/CJK status of its source."""
    t = ut.unicode_tables()
    cps = np.arange(0x110000)
    source_class = _props(t, cps) & ut.CLASS_MASK
    rows = _lower_rows(t, cps)
    for cp in np.flatnonzero(rows >= 0):
        mapped = t.lower_values[rows[cp]]
        mapped = mapped[mapped >= 0]
        classes = _props(t, mapped) & ut.CLASS_MASK
        assert source_class[cp] not in (ut.DROP, ut.SPACE)
        assert not np.isin(classes, [ut.DROP, ut.SPACE]).any(), hex(cp)
        assert ((classes == ut.CJK) == (source_class[cp] == ut.CJK)).all(), hex(cp)


def test_known_properties():
    t = ut.unicode_tables()
    prop = lambda ch: int(_props(t, np.array([ord(ch)]))[0])  # noqa: E731
    assert prop("\x01") & ut.CLASS_MASK == ut.DROP and prop("\u200b") & ut.CLASS_MASK == ut.DROP
    assert prop("\t") & ut.CLASS_MASK == ut.SPACE and prop("\u2028") & ut.CLASS_MASK == ut.SPACE
    assert prop("\ue000") & ut.CLASS_MASK == ut.WORD  # private use: kept by the original (not by HF)
    assert prop("$") & ut.CLASS_MASK == ut.PUNCT and prop("中") & ut.CLASS_MASK == ut.CJK
    assert prop("Σ") & ut.CASED and prop("'") & ut.CASE_IGNORABLE and not prop(" ") & (ut.CASED | ut.CASE_IGNORABLE)


def test_final_sigma_lower_cases_to_itself():
    """The graph gives the final sigma it substitutes for a capital sigma no lower-case row."""
    t = ut.unicode_tables()
    assert _lower_rows(t, np.array([ut.FINAL_SIGMA]))[0] == -1
    assert _lower_rows(t, np.array([ut.CAPITAL_SIGMA]))[0] >= 0


def test_every_code_point_lower_cases_and_sees_final_sigma_as_python_does():
    """Every code point, one at a time, against Python itself: the uncased mapping (str.lower(), NFD, category Mn
    dropped, as the reference maps each word) and the Final_Sigma bits (whether "xΣ" and "ΑxΣ" lower-case to a
    final sigma). The tables probe only code points that can have a case; this checks that none was missed."""
    t = ut.unicode_tables()
    cps = np.arange(sys.maxunicode + 1)
    props, rows = _props(t, cps), _lower_rows(t, cps)
    wrong = []
    for cp in range(sys.maxunicode + 1):
        if props[cp] & ut.CLASS_MASK in (ut.DROP, ut.SPACE):  # removed before the reference lower-cases
            continue
        ch = chr(cp)
        mapped = "".join(c for c in unicodedata.normalize("NFD", ch.lower()) if unicodedata.category(c) != "Mn")
        table = ch if rows[cp] < 0 else "".join(chr(v) for v in t.lower_values[rows[cp]] if v >= 0)
        sigma = (
            ut.CASED
            if (ch + "\u03a3").lower().endswith("\u03c2")
            else ut.CASE_IGNORABLE
            if ("\u0391" + ch + "\u03a3").lower().endswith("\u03c2")
            else 0
        )
        if table != mapped or props[cp] & (ut.CASED | ut.CASE_IGNORABLE) != sigma:
            wrong.append(hex(cp))
    assert not wrong, wrong[:20]


def _equal(a, b):
    return (
        all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("pages", "blocks", "lower_values"))
        and a.unicode_version == b.unicode_version
    )


def test_tables_are_cached_per_unicode_version_and_code_and_read_back_equal(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_BERT_LITE_CACHE", str(tmp_path))
    path = ut.cache_file()
    assert path.startswith(str(tmp_path)) and unicodedata.unidata_version in os.path.basename(path)
    built = ut.load_or_build(path)
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]  # no temporary left
    monkeypatch.setattr(ut, "build_unicode_tables", lambda: pytest.fail("built again instead of read"))
    assert _equal(ut.load_or_build(path), built)
    assert _equal(built, ut.unicode_tables())  # what the tokenizer uses


@pytest.mark.parametrize("damage", ["truncated", "not an npz", "out-of-range page"])
def test_a_damaged_cache_file_is_rebuilt_and_replaced(tmp_path, damage):
    path = str(tmp_path / "tables.npz")
    good = ut.load_or_build(path)
    if damage == "truncated":
        data = open(path, "rb").read()
        open(path, "wb").write(data[: len(data) // 2])
    elif damage == "not an npz":
        open(path, "w").write("hello")
    else:
        np.savez(
            path,
            pages=good.pages + len(good.blocks),
            blocks=good.blocks,
            lower_values=good.lower_values,
            unicode_version=np.asarray(good.unicode_version),
        )
    assert _equal(ut.load_or_build(path), good)
    with np.load(path) as saved:  # rewritten whole
        assert np.array_equal(saved["pages"], good.pages)


def test_an_unwritable_cache_still_gives_the_tables(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would go")
    assert _equal(ut.load_or_build(str(blocked / "unicode" / "tables.npz")), ut.unicode_tables())
