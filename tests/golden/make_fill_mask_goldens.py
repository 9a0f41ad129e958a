"""Generates the fill-mask golden files from the reference implementation (Hugging Face transformers' pipeline).

Not a test and not a runtime dependency. Reference environment: that of make_model_goldens.py (`make goldens`
builds it and runs this script after make_model_goldens.py, whose hf_tiny_pretraining/ it reads). By hand:

    HF_HUB_OFFLINE=1 bench/.venvs/goldens/bin/python tests/golden/make_fill_mask_goldens.py

Writes, next to this file:
  * hf_tiny_masked_lm/ — a tiny randomly initialised `BertForMaskedLM` (no pooler, no next-sentence head; exact
    GELU; every tensor perturbed so that the predictions depend on the context) saved as config.json +
    model.safetensors, with a 120-token uncased vocab.txt and its tokenizer_config.json: lower-case letters and
    their `##` pieces (so every ASCII word has pieces), punctuation and a few whole words and pieces.
  * fill_mask_goldens.json — `pipeline("fill-mask", top_k=5)` on TEXTS (one and several masks, masks glued to
    words and to each other, casing, accents, a word the vocabulary cannot cover, a lower-case "[mask]" that is
    no mask) for two models with that tokenizer: hf_tiny_masked_lm and make_model_goldens.py's
    hf_tiny_pretraining (a `BertForPreTraining`, tanh GELU, loaded by the pipeline as a `BertForMaskedLM`). Per
    model, per text, per mask in order: the top-5 `token` ids, `token_str`s and `score`s.

Every top-5 is at least MIN_GAP from a tie (consecutive probabilities among the top 6 differ by that much, checked
here), so that the order is the reference's and not rounding's: implementations whose logits differ by 1e-5 move
a probability by less than 1e-6 here.
"""

import json
import os

import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_DIR = os.path.join(HERE, "hf_tiny_masked_lm")
TOP_K = 5
MIN_GAP = 1e-6
TEXTS = [
    "The capital of France is [MASK].",
    "Paris is the [MASK] of [MASK].",
    "[MASK] cat sat on the mat[MASK]",
    "She was walking to the big [MASK] [MASK] yesterday.",
    "Die Straße ist [MASK].",
    "HELLO [MASK] world, the [mask] is not a mask.",
    "[MASK]",
    "un[MASK]ably big, red[MASK][MASK] and small dogs went in the house.",
    "  naïve [MASK]\tcafé  ",
]
WORDS = (
    "the capital of france is paris cat sat on mat she was walk ##ing to yesterday hello world not mask city "
    "dog house un ##believ ##ably went big small red and in"
).split()


def vocab_tokens() -> list[str]:
    """120 tokens: the special ones, punctuation, a-z and ##a-##z, WORDS, then filler."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *".,!?[]'-();:", *letters, *("##" + c for c in letters)]
    tokens += WORDS
    return tokens + [f"w{i}" for i in range(120 - len(tokens))]


def make_masked_lm():
    """hf_tiny_masked_lm/: the model, its vocab.txt and tokenizer_config.json."""
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=120,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        hidden_act="gelu",
        max_position_embeddings=64,
        type_vocab_size=2,
        layer_norm_eps=1e-12,
    )
    model = transformers.BertForMaskedLM(config).eval()
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.add_(torch.randn_like(p) * 0.3)
    model.save_pretrained(MODEL_DIR, safe_serialization=True)
    with open(os.path.join(MODEL_DIR, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in vocab_tokens()))
    with open(os.path.join(MODEL_DIR, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}, f, indent=2)
        f.write("\n")


def predictions(model_dir: str) -> list:
    """The pipeline's top-5 per text, per mask: [{token, token_str, score}]."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(MODEL_DIR)
    fill = transformers.pipeline("fill-mask", model=model_dir, tokenizer=tokenizer, top_k=TOP_K + 1, device="cpu")
    out = []
    for text in TEXTS:
        masks = fill(text)
        masks = [masks] if isinstance(masks[0], dict) else masks
        for mask in masks:
            scores = [p["score"] for p in mask]
            gap = float(np.min(-np.diff(scores)))
            assert gap >= MIN_GAP, f"{model_dir}: {text!r}: top-{TOP_K + 1} within {gap} of a tie; change the text"
        out.append([[{k: p[k] for k in ("token", "token_str", "score")} for p in mask[:TOP_K]] for mask in masks])
    return out


def main():
    make_masked_lm()
    models = {name: predictions(os.path.join(HERE, name)) for name in ("hf_tiny_masked_lm", "hf_tiny_pretraining")}
    golden = {
        "texts": TEXTS,
        "top_k": TOP_K,
        "models": models,
        "versions": [f"torch {torch.__version__}", f"transformers {transformers.__version__}"],
    }
    with open(os.path.join(HERE, "fill_mask_goldens.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("fill_mask_goldens.json:", {name: sum(map(len, texts)) for name, texts in models.items()}, "masks")


if __name__ == "__main__":
    main()
