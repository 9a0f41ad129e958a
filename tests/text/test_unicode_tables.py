"""The per-code-point tables: invariants the graph relies on, and the Final_Sigma probes against str.lower()."""

import sys
import unicodedata

import numpy as np

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
    assert prop("\ue000") & ut.CLASS_MASK == ut.WORD        # private use: kept by the original (not by HF)
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
        if props[cp] & ut.CLASS_MASK in (ut.DROP, ut.SPACE):           # removed before the reference lower-cases
            continue
        ch = chr(cp)
        mapped = "".join(c for c in unicodedata.normalize("NFD", ch.lower()) if unicodedata.category(c) != "Mn")
        table = ch if rows[cp] < 0 else "".join(chr(v) for v in t.lower_values[rows[cp]] if v >= 0)
        sigma = (ut.CASED if (ch + "\u03a3").lower().endswith("\u03c2") else
                 ut.CASE_IGNORABLE if ("\u0391" + ch + "\u03a3").lower().endswith("\u03c2") else 0)
        if table != mapped or props[cp] & (ut.CASED | ut.CASE_IGNORABLE) != sigma:
            wrong.append(hex(cp))
    assert not wrong, wrong[:20]
