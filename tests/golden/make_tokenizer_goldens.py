"""Writes tests/golden/tokenizer_goldens.json: the hard lines the tokenizer tests hold BertTokenizer to.

The file holds text only. The expected ids are not stored: tests/text/test_tokenizer.py computes them on every
run with the reference tokenizer, google-research/bert tokenization.py (text_reference_tokenization.py beside
this file, unchanged algorithm, max_input_chars_per_word=100), on the interpreter running the tests. The
reference reads Python's `unicodedata`, whose tables change with the Python version (Unicode 13.0 in Python 3.10,
14.0 in 3.11, 15.0 in 3.12, 15.1 in 3.13), so ids pinned under one Python can be wrong under another (the two
"Unicode-1x" lines below give different ids under 3.10, 3.11 and 3.12+); the text is the same on every Python.

Lines: hand-written edge cases (including characters whose class or case mapping changed between Unicode 13 and
15, so each supported Python's own tables are exercised) plus a deterministic sample of real text under permissive
licences only, since the lines are committed: the Python documentation (`pydoc_data.topics`, PSF licence) and
CLDR locale data through Babel (Unicode licence): names of territories, languages, currencies, months and days
in 26 locales, joined with each locale's own list pattern, and dates, numbers and amounts formatted the locale's
way (real punctuation, no-break and narrow spaces, RTL marks).

Reference environment: Python 3.11 (the sampled documentation is the running Python's: another version samples
other, equally valid lines; the committed file was made with the Python named in its "python" field) with
babel==2.18.0 (CLDR 47); nothing else. `make goldens` runs it in bench/.venvs/goldens (the reference venv it
builds with Python 3.11 for make_model_goldens.py too); by hand, in any Python 3.11 venv:
    pip install babel==2.18.0
    python tests/golden/make_tokenizer_goldens.py
"""

import argparse
import datetime
import json
import pathlib
import random
import sys

HERE = pathlib.Path(__file__).resolve().parent
OUTPUT = HERE / "tokenizer_goldens.json"

HAND_WRITTEN = [
    "",
    " ",
    "\t\n\r ",
    "Hello, World!",
    "unaffable UNAFFABLE Unaffable",
    "The quick brown fox — jumps… “quoted”",
    "Straße STRASSE ß ẞ",
    "Ünïcödé Ñandú àéîõü ÀÉÎÕÜ",
    "ﬁ ﬂ ﬀ ligatures",
    "Ⅻ ① ² ½ ™ ℃ ㎏",
    "full-width ＡＢＣ，ｄｅｆ！１２３",
    "ΟΔΟΣ ΣΑΣ. Σ ΑΣ'Β ΑΣ' ΑΣ\u0301 ἈΣ Ὀδυσσεύς ΣΊΣΥΦΟΣ",
    "İstanbul ISTANBUL ı İ",
    "Привет, МИР! Ёжик",
    "Dobrý den, čeština ŘEŘICHA",
    "¿Qué tal? ¡Olé!",
    "中文字符测试，你好！",
    "日本語のテキスト、カタカナ",
    "한국어 텍스트 입니다",
    "混合mixed中文English",
    "\U00020000\U0002a700\U0002b820 \uf900\ufa30 \U0002f800 extension",
    "emoji 😀👍🏽 👨‍👩‍👧 🇩🇪 ❤️",
    "zero\u200bwidth\u200cjoin\u200dners \ufeffBOM",
    "non\u00a0breaking\u2009thin\u3000ideo",
    "line\u2028separator\u2029para",
    "ctrl\x01\x02\x7f\x80\x9fchars",
    "vt\x0bff\x0cfs\x1cgs\x1dus\x1f nel\x85end",
    "soft\u00adhyphen",
    "tab\tsep\tvalues\r\nwindows",
    "NUL\x00in\x00middle",
    "replacement\ufffdchar",
    "private\ue000use \U000f0000 unassigned\u0378\U000e0001tag",
    "lone combining \u0301\u0308 a\u0301 e\u0308\u0323",
    "decomposed e\u0301cole NFD vs école NFC",
    "Hangul jamo \u1100\u1161\u11a8 vs 각",
    "a" * 100,
    "b" * 101,
    "ä" * 100 + " " + "ä" * 101,
    "x" + "\u0301" * 150,
    "supercalifragilisticexpialidocious " * 3,
    "punct!!!???...---___(((]]]{{{}}}",
    "$100 ^caret `tick ~tilde |pipe \\backslash @at #hash",
    "ascii only: can't won't it's e-mail x@y.z",
    "numbers 3.14159 1,000,000 2e-10",
    "«guillemets» „Anführung“ ‹›",
    "math ∑∫√∞≠≤ ± × ÷",
    "arrows ←→↑↓ ⇒ box ─│┌┐",
    "Ethiopic ሰላም ። Arabic مرحبا، Hebrew שָׁלוֹם",
    "Hindi नमस्ते दुनिया। Thai สวัสดีครับ",
    "Vietnamese Tiếng Việt có dấu",
    "ǅungla ǆ Ǆ ǈ ǋ",
    "Kelvin K Ohm Ω Å",
    "[CLS] [SEP] [MASK] [UNK] [PAD] special tokens in text",
    "##hash ## prefix",
    "\U0001d400\U0001d41a math bold",
    "ꞵ Unicode-14 ꟀꟁꟐ 𐞀",
    "trailing spaces   ",
    "   leading spaces",
    # New in Unicode 14 (Python 3.11): a format character (dropped), a dash (punctuation), a cased script.
    "Unicode-14 pound\u0890mark oblique\u2e5dhyphen \U00010570\U00010597 VITHKUQI \U0001df00",
    # New in Unicode 15 / 15.1 (Python 3.12 / 3.13): combining marks (stripped when uncased), a danda
    # (punctuation), letters, CJK Extension H and I ideographs (outside the reference's CJK ranges: word characters).
    # 15.1 changes no property the reference reads (checked over all code points), but its characters are here.
    "Unicode-15 a\U0001e08fb \U00011f04\U00011f00\U00011f43x \U0001e4d0\U0001e4ec \U0001e030 \U00031350\U00031351 "
    "\u2ffc\u2ffd \U0002ebf0\U0002ebf1 ಕ\u0cf3 \U0001f6dc",
]
INVALID_UTF8 = [
    b"bad\xff\xfebytes",
    b"trunc\xe4\xb8",
    b"\xc0\xafoverlong",
    b"\xed\xa0\x80surrogate",
    b"ok \xe2\x82\xac euro \x80 cont",
    b"\xf4\x90\x80\x80beyond",
    b"caf\xe9 latin1",
]


# One per script or punctuation convention worth testing; CLDR codes.
CLDR_LOCALES = (
    "de",
    "es",
    "fr",
    "ru",
    "uk",
    "cs",
    "pl",
    "tr",
    "vi",
    "el",
    "ar",
    "fa",
    "he",
    "hi",
    "bn",
    "ta",
    "th",
    "my",
    "km",
    "ka",
    "hy",
    "am",
    "ja",
    "ko",
    "zh_Hans",
    "zh_Hant",
)


def python_docs_sample(count, rng):
    """`count` lines of the Python documentation, the non-ASCII ones first (there are few)."""
    from pydoc_data.topics import topics

    lines = [line for key in sorted(topics) for line in topics[key].split("\n") if line.strip()]
    rich = [line for line in lines if not line.isascii()]
    return rich[: count // 2] + rng.sample(lines, count - min(count // 2, len(rich)))


def cldr_sample(per_locale, rng):
    """`per_locale` lines per CLDR_LOCALES locale: name lists in the locale's list pattern, then formatted values."""
    from babel import Locale, dates, lists, numbers

    moment = datetime.datetime(2024, 3, 5, 14, 7, 9)
    lines = []
    for code in CLDR_LOCALES:
        locale = Locale.parse(code)
        names = [
            name
            for table in (locale.territories, locale.languages, locale.currencies)
            for _, name in sorted(table.items())
        ]
        names += [name for _, name in sorted(locale.months["format"]["wide"].items())]
        names += [name for _, name in sorted(locale.days["format"]["wide"].items())]
        for _ in range(per_locale - 3):
            lines.append(lists.format_list(rng.sample(names, rng.randint(2, 5)), locale=locale))
        lines.append(dates.format_datetime(moment, "full", tzinfo=datetime.timezone.utc, locale=locale))
        lines.append(
            numbers.format_currency(-1234567.891, "EUR", locale=locale)
            + " · "
            + numbers.format_percent(0.256, locale=locale)
        )
        lines.append(numbers.format_decimal(1234567.891, locale=locale))
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args()
    import babel
    from babel.core import get_cldr_version

    rng = random.Random(1)
    real = python_docs_sample(48, rng) + cldr_sample(14, rng)
    lines = [t.encode("utf-8", "surrogatepass") for t in HAND_WRITTEN + real] + INVALID_UTF8
    lines = list(dict.fromkeys(lines))
    cases = [{"text": line.decode()} if _is_utf8(line) else {"utf8_hex": line.hex()} for line in lines]
    golden = {
        "expected_ids": "computed by tests/text with text_reference_tokenization.py (google-research/bert "
        "tokenization.py, max_input_chars_per_word=100) on the Python running the tests",
        "python": sys.version.split()[0],
        "real_text": f"pydoc_data.topics of that Python, CLDR {get_cldr_version()} (babel {babel.__version__})",
        "cases": cases,
    }
    head = json.dumps({k: v for k, v in golden.items() if k != "cases"}, ensure_ascii=False)[:-1]
    rows = ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases)
    OUTPUT.write_text(f'{head}, "cases": [\n{rows}\n]}}\n', encoding="utf-8")  # one case per line
    print(f"wrote {OUTPUT}: {len(cases)} lines")


def _is_utf8(line):
    try:
        line.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


if __name__ == "__main__":
    main()
