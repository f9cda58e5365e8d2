"""Write ``reviews.tsv``: a small labelled corpus for ``examples/text_classification.py``.

Each line is ``label<TAB>text``; label 1 reviews lean on positive words, label 0 on negative
ones, with neutral filler and a little noise so the task is not trivially separable. The
output depends only on the seed, so re-running this script reproduces the shipped file.

    python examples/data/make_corpus.py            # rewrites examples/data/reviews.tsv
"""
import os
import random

POSITIVE = ["great", "excellent", "lovely", "delightful", "superb", "enjoyable", "charming",
            "brilliant", "pleasant", "wonderful", "fresh", "friendly", "tasty", "reliable"]
NEGATIVE = ["awful", "terrible", "bland", "broken", "rude", "boring", "disappointing",
            "stale", "noisy", "dreadful", "slow", "greasy", "overpriced", "dirty"]
NEUTRAL = ["the", "food", "service", "place", "was", "and", "a", "very", "room", "staff",
           "we", "it", "our", "table", "meal", "visit", "really", "quite", "again", "menu"]


def review(rng, label):
    own, other = (POSITIVE, NEGATIVE) if label == 1 else (NEGATIVE, POSITIVE)
    words = [rng.choice(NEUTRAL) for _ in range(rng.randint(4, 9))]
    words += [rng.choice(own) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.3:  # a contrary word now and then
        words.append(rng.choice(other))
    rng.shuffle(words)
    return " ".join(words)


def write_corpus(path, lines=400, seed=0):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("label\ttext\n")
        for _ in range(lines):
            label = rng.randint(0, 1)
            f.write(f"{label}\t{review(rng, label)}\n")


if __name__ == "__main__":
    write_corpus(os.path.join(os.path.dirname(os.path.abspath(__file__)), "reviews.tsv"))
