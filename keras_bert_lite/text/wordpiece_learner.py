"""WordPiece vocabulary learning: the algorithm of tf_text's learner, in time linear in the words' pieces.

tf_text's `wordpiece_tokenizer_learner_lib.learn` (what its `bert_vocab_from_dataset` and KerasHub's
`compute_word_piece_vocabulary` run) binary-searches a frequency threshold. For one threshold it iterates:

1. split each word into pieces with the current vocabulary (greedy longest match from the left, `##` after the
   first piece), and count, weighted by the word's count, every substring that starts where a piece starts and
   ends anywhere up to the word's end (in the first iteration every character starts a piece);
2. visit the substrings from the longest down, keep each whose count reaches the threshold, and subtract its count
   from each of its shorter prefixes.

Step 2 telescopes. A substring is a prefix of exactly the suffixes (from a piece's start to the word's end) it
was counted for, and each longer substring from the same start has already taken its own remainder off it, so
what remains is the weight of the words in which it *is* such a suffix. A threshold's next vocabulary is therefore
the piece-start suffixes whose weight reaches it: O(pieces) per word instead of O(length^2) substrings. The first
iteration does not depend on the threshold, so it is counted once for the whole search.

`learn` returns exactly the list tf_text's `learn` returns for the same arguments (include_joiner_token=True,
the only mode BERT's vocabularies use); tests/text/test_wordpiece_learner.py checks it against tf_text's.
"""

from __future__ import annotations

import collections
from typing import Iterable, Mapping


class _Learner:
    """The threshold-independent state of one search: the filtered words, their characters, the first
    iteration's weights."""

    def __init__(self, words: list[tuple[str, int]], num_iterations: int, joiner: str):
        self.words, self.num_iterations, self.joiner = words, num_iterations, joiner
        self.chars = {char for word, _ in words for char in word}
        # Iteration 1: every position starts a piece, so every suffix is a piece-start suffix.
        self.first = self._weights((word, count, range(len(word))) for word, count in words)

    def _weights(self, starts_of_words) -> tuple[collections.Counter, collections.Counter]:
        """(word-start suffixes, later suffixes without the joiner) → summed counts."""
        whole, joined = collections.Counter(), collections.Counter()
        for word, count, starts in starts_of_words:
            for start in starts:
                if start:
                    joined[word[start:]] += count
                else:
                    whole[word] += count
        return whole, joined

    def _tokens(self, weights, thresh: int) -> dict[str, int]:
        """The suffixes that reach `thresh`, with their weights, and every character (count 1 if not there).

        A later suffix shadows a word spelt with the joiner (tf_text visits the shorter one last)."""
        whole, joined = weights
        tokens = {token: count for token, count in whole.items() if count >= thresh}
        tokens.update((self.joiner + piece, count) for piece, count in joined.items() if count >= thresh)
        for char in self.chars:
            tokens.setdefault(char, 1)
            tokens.setdefault(self.joiner + char, 1)
        return tokens

    def _prefixes(self, tokens: Mapping[str, int]) -> tuple[dict[str, bool], dict[str, bool]]:
        """For first pieces, and for later pieces (the joiner's tokens without it): every prefix of a token →
        whether it is one, so that a longest match walks forward and stops where no token goes on."""
        first, later = {}, {}
        for token in tokens:
            _add_prefixes(first, token)
            if token.startswith(self.joiner):
                _add_prefixes(later, token[len(self.joiner) :])
        return first, later

    @staticmethod
    def _piece_starts(word: str, prefixes: tuple[dict[str, bool], dict[str, bool]]) -> list[int] | None:
        """Where `word`'s pieces start under greedy longest match (tf_text's `get_split_indices`), or None if
        some position matches nothing."""
        starts, start = [], 0
        while start < len(word):
            known, end, match = prefixes[start > 0], start + 1, None
            while end <= len(word):
                is_token = known.get(word[start:end])
                if is_token is None:
                    break
                if is_token:
                    match = end
                end += 1
            if match is None:
                return None
            starts.append(start)
            start = match
        return starts

    def vocabulary(self, thresh: int, reserved_tokens: list[str]) -> list[str]:
        """The vocabulary the iterations reach at frequency threshold `thresh`."""
        tokens = self._tokens(self.first, thresh) if self.num_iterations else self._tokens(({}, {}), thresh)
        for _ in range(self.num_iterations - 1):
            prefixes = self._prefixes(tokens)
            pieces = ((word, count, self._piece_starts(word, prefixes)) for word, count in self.words)
            tokens = self._tokens(self._weights((w, c, s) for w, c, s in pieces if s), thresh)
        ranked = sorted(sorted(tokens.items()), key=lambda item: item[1], reverse=True)  # count, then name
        return list(dict.fromkeys([*reserved_tokens, *sorted(self.chars), *(token for token, _ in ranked)]))


def _add_prefixes(prefixes: dict[str, bool], token: str) -> None:
    for end in range(1, len(token)):
        prefixes.setdefault(token[:end], False)
    if token:
        prefixes[token] = True


def _filtered_words(
    word_counts: list[tuple[str, int]],
    reserved_tokens,
    max_token_length: int,
    max_unique_chars: int,
    max_input_tokens: int | None,
) -> list[tuple[str, int]]:
    """tf_text's input filter: no reserved or over-long words, only the most frequent characters, the most
    frequent words first (ties in input order), at most `max_input_tokens` of them."""
    reserved = set(reserved_tokens)
    kept = [(word, count) for word, count in word_counts if len(word) <= max_token_length and word not in reserved]
    char_counts = collections.defaultdict(int)
    for word, count in kept:
        for char in word:
            char_counts[char] += count
    ranked_chars = sorted(sorted(char_counts.items()), key=lambda item: item[1], reverse=True)
    allowed = {char for char, _ in ranked_chars[:max_unique_chars]}
    words = []
    for word, count in sorted(kept, key=lambda item: item[1], reverse=True):
        if max_input_tokens not in (None, -1) and len(words) >= max_input_tokens:
            break
        if all(char in allowed for char in word):
            words.append((word, count))
    return words


SLACK_RATIO = 0.05  # tf_text's default: how far below vocab_size a vocabulary may land


def learn(
    word_counts: Mapping[str, int] | Iterable[tuple[str, int]],
    vocab_size: int,
    reserved_tokens: list[str],
    *,
    upper_thresh: int | None = 10_000_000,
    lower_thresh: int | None = 10,
    num_iterations: int = 4,
    max_input_tokens: int | None = 5_000_000,
    max_token_length: int = 50,
    max_unique_chars: int = 1000,
    slack_ratio: float = SLACK_RATIO,
    joiner: str = "##",
) -> list[str]:
    """A WordPiece vocabulary from word counts: tf_text's `learn` with `include_joiner_token=True`.

    Args:
        word_counts: word → count, or (word, count) pairs (their order breaks ties between equal counts when
            `max_input_tokens` cuts the list, as in tf_text).
        vocab_size: the target: the search stops within `slack_ratio` below it; where no threshold lands there, it
            ends where its bounds meet, above it or further below (as tf_text's).
        reserved_tokens: placed first, in order.
        upper_thresh, lower_thresh: bounds of the frequency-threshold search (clipped to the counts).
        num_iterations: splitting-and-counting rounds per threshold.
        max_input_tokens: the most frequent words kept (None or -1: all).
        max_token_length: longer words are dropped.
        max_unique_chars: only words made of the most frequent characters are kept.
        slack_ratio: how far below `vocab_size` a vocabulary may land.
        joiner: the prefix of pieces that continue a word.

    Returns:
        The tokens: reserved ones, then single characters (sorted), then pieces by count (ties by name).
    """
    pairs = list(word_counts.items() if isinstance(word_counts, Mapping) else word_counts)
    counts = [count for _, count in pairs]
    upper = max(counts) if upper_thresh is None else min(max(counts), upper_thresh)
    lower = min(counts) if lower_thresh is None else max(min(counts), lower_thresh)
    learner = _Learner(
        _filtered_words(pairs, reserved_tokens, max_token_length, max_unique_chars, max_input_tokens),
        num_iterations,
        joiner,
    )
    slack = max(slack_ratio * vocab_size, 0)
    while True:  # binary search on the threshold, as tf_text's
        thresh = (upper + lower) // 2
        vocab = learner.vocabulary(thresh, reserved_tokens)
        if (len(vocab) <= vocab_size and vocab_size - len(vocab) <= slack) or lower >= upper or thresh <= 1:
            return vocab
        if len(vocab) > vocab_size:
            lower = thresh + 1
        else:
            upper = thresh - 1
