"""Real text that ships with Python, in the original BERT pretraining format (for the demo and tests).

`pydoc_data.topics` holds ~460 KB of the Python reference documentation. Each section of a topic becomes a
document; its prose is split into sentences (one per line), code lines are kept as lines of their own.
"""

from __future__ import annotations

import re

from keras_bert_lite.utils.files import atomic_write_text

_HEADING_RULE = re.compile(r"^\s*([*=\-~^])\1{3,}\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")


def pydoc_documents(min_sentences: int = 2) -> list[list[str]]:
    """The Python docs as documents (lists of sentences)."""
    import pydoc_data.topics

    documents = []
    for name in sorted(pydoc_data.topics.topics):
        lines = pydoc_data.topics.topics[name].splitlines()
        sections, current = [], []
        for i, line in enumerate(lines):
            if _HEADING_RULE.match(line) and current:
                sections.append(current[:-1])   # the line above the rule is the next section's title
                current = current[-1:]
            current.append(line)
        sections.append(current)
        for section in sections:
            sentences = _sentences(section)
            if len(sentences) >= min_sentences:
                documents.append(sentences)
    return documents


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
        elif line.startswith("   "):          # code / indented block: keep as its own line
            flush()
            out.append(line.strip())
        else:
            paragraph.append(line.strip())
    flush()
    return out


def write_corpus(path: str, documents: list[list[str]]) -> None:
    """Writes documents in the original format: one sentence per line, a blank line between documents."""
    atomic_write_text(path, "\n\n".join("\n".join(doc) for doc in documents) + "\n")
