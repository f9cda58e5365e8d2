"""Text classification with DataPipes, the DataLoader and a tiny bag-of-words model.

The corpus is ``examples/data/reviews.tsv`` (400 labelled lines written by
``examples/data/make_corpus.py``). The pipeline is torchdata-style:

    FileLister -> open_files -> parse_csv(delimiter="\\t") -> random_split(train/test)
      -> shuffle -> sharding_filter -> map(encode) -> DataLoader(batch_size, num_workers)

Run:  python examples/text_classification.py [--workers 2] [--epochs 8] [--device cpu]
"""
import argparse
import os
import sys

import ember
import ember.nn as nn
from ember.data.datapipes.iter import FileLister
from ember.utils.data import DataLoader

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
MAX_TOKENS = 16
PAD = 0


def parse_row(row):
    label, text = row
    return int(label), text.split()


class Encoder:
    """tokens -> fixed-length id tensor (padded with 0); a class so workers can pickle it."""

    def __init__(self, vocab):
        self.vocab = vocab

    def __call__(self, sample):
        label, tokens = sample
        ids = [self.vocab.get(t, 1) for t in tokens[:MAX_TOKENS]]
        ids += [PAD] * (MAX_TOKENS - len(ids))
        return ember.tensor(ids, dtype=ember.int64), label


def rows(root):
    return FileLister(root, "*.tsv").open_files(encoding="utf-8") \
        .parse_csv(delimiter="\t", skip_lines=1).map(parse_row)


def build_vocab(samples):
    vocab = {"<pad>": PAD, "<unk>": 1}
    for _, tokens in samples:
        for t in tokens:
            vocab.setdefault(t, len(vocab))
    return vocab


def splits(root, seed=0):
    samples = list(rows(root))
    train, test = rows(root).random_split(weights={"train": 0.8, "test": 0.2}, seed=seed,
                                          total_length=len(samples))
    return train, test, build_vocab(list(train))


class BagOfWords(nn.Module):
    def __init__(self, vocab_size, dim=16, classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=PAD)
        self.out = nn.Linear(dim, classes)

    def forward(self, ids):
        mask = (ids != PAD).to(ember.float32).unsqueeze(-1)
        summed = (self.embed(ids) * mask).sum(1)
        return self.out(summed / mask.sum(1).clamp_min(1.0))


def accuracy(model, loader, device):
    correct = total = 0
    with ember.no_grad():
        for ids, labels in loader:
            pred = model(ids.to(device)).argmax(1).cpu()
            correct += int((pred == labels).sum().item())
            total += labels.numel()
    return correct / total


def main(argv=None):
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()),
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    parser.add_argument("--epochs", type=int, default=8, help="passes over the training split")
    parser.add_argument("--batch-size", type=int, default=32, help="reviews per step")
    parser.add_argument("--device", default="cpu", help="device of the model")
    parser.add_argument("--data", default=DATA_DIR, help="directory holding reviews.tsv")
    args = parser.parse_args(argv)
    ember.manual_seed(0)

    train, test, vocab = splits(args.data)
    encode = Encoder(vocab)
    train_pipe = train.shuffle().sharding_filter().map(encode)
    test_pipe = test.sharding_filter().map(encode)
    train_loader = DataLoader(train_pipe, batch_size=args.batch_size, num_workers=args.workers,
                              shuffle=True, persistent_workers=args.workers > 0)
    test_loader = DataLoader(test_pipe, batch_size=64, num_workers=args.workers)

    model = BagOfWords(len(vocab)).to(args.device)
    optimizer = ember.optim.Adam(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    print(f"vocabulary {len(vocab)} words; {args.workers} loader workers; device "
          f"{args.device}")
    for epoch in range(args.epochs):
        total, batches = 0.0, 0
        for ids, labels in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(ids.to(args.device)), labels.to(args.device))
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
        print(f"epoch {epoch + 1}: train loss {total / batches:.4f}", flush=True)  # also piped
    acc = accuracy(model, test_loader, args.device)
    print(f"test accuracy {acc:.3f}")
    return acc


if __name__ == "__main__":
    sys.exit(0 if main() > 0.8 else 1)
