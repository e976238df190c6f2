"""The PyTorch reference rows of the CTR benchmarks: the same networks as ``nets.build('deepfm', ...)`` and
``nets.build('fm', ...)`` (a first-order weight per value, an FM over the field embeddings, and for DeepFM an MLP over
the embeddings and the numeric columns) written in PyTorch, trained in one process (``torch.set_num_threads``),
BCE loss, shuffled batches, in one of two ways (``--embeddings``):

* ``dense``: ``nn.Embedding`` tables and one ``torch.optim.Adam`` over every parameter, so every table row moves at
  every step (its moments decay even when no batch reads it);
* ``sparse``: ``nn.Embedding(sparse=True)`` tables under ``torch.optim.SparseAdam`` (only the rows a batch reads
  move) and ``torch.optim.Adam`` for the dense part: the lazy updates sparkps's servers make. SparseAdam keeps one
  step count per table for its bias correction; sparkps counts each row's own updates.

Either takes sparkps's regularisation (``SparkpsCTRClassifier``'s ``embeddingL2`` and ``dropout``,
``sparkps.spark.ml.ctr_classifier.regularisation_args``): ``--dropout P`` after each hidden layer of the deep part,
``--embedding-l2 L`` adds ``L * row`` to the gradient of each field-embedding row a batch reads, once per step
(Adam's L2 through the moments, as sparkps's Adam with ``wd`` and embedding_wd_mult 1; the first-order rows and the
dense layers do not decay). Both default to 0.

torch is a development extra: bench_ctr and bench_ctr_quality run this file with a Python that has torch
(``--torch-python``; by default their own when torch imports there), handing the rows over as one ``.npz``
(``ids``: the hashed 64-bit ids of each field already mapped to 0..n-1, which favours this row; ``numeric``,
``labels``, ``train_rows`` and optionally ``valid_rows``: the first ``train_rows`` rows train, the next
``valid_rows`` (default 0) are scored as validation rows, the rest are the test rows). It prints one JSON line:
test AUC and logloss (and the validation AUC when there are validation rows), fit seconds, samples/s, threads.
``--warmup-rows N`` first trains a throwaway copy of the model one pass over the first N training rows, untimed
(the real model starts from the same seed either way).

    python benchmarks/torch_deepfm.py DATA.npz --epochs 3 --batch-size 2048 --lr 0.02 --threads 2
    python benchmarks/torch_deepfm.py DATA.npz --embeddings sparse --dropout 0.5 --embedding-l2 1e-4
    python benchmarks/torch_deepfm.py DATA.npz --model fm --dim 8 --epochs 4 --batch-size 256 --lr 0.003 --seed 1
"""
import argparse
import json
import sys
import time

import numpy as np


def auc(labels, scores):
    """Exact ROC AUC (ties averaged), as sparkps.metric.ctr.binary_auc."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores), np.float64)
    sorted_scores = scores[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_scores)) + 1]
    ends = np.r_[starts[1:], len(scores)]
    for lo, hi in zip(starts, ends):
        ranks[order[lo:hi]] = (lo + hi + 1) / 2.0
    positives = labels > 0.5
    n_pos, n_neg = positives.sum(), (~positives).sum()
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=2048)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--dim", type=int, default=4)
    p.add_argument("--hidden", default="32,16", help="MLP widths of DeepFM's deep part")
    p.add_argument("--model", choices=("deepfm", "fm"), default="deepfm")
    p.add_argument("--embeddings", choices=("dense", "sparse"), default="dense",
                   help="dense: nn.Embedding under Adam (every row moves every step); sparse: "
                   "nn.Embedding(sparse=True) under SparseAdam (only the rows a batch reads), Adam for the dense part")
    p.add_argument("--dropout", type=float, default=0.0, help="dropout after each hidden layer of the deep part")
    p.add_argument("--embedding-l2", type=float, default=0.0,
                   help="L2 on the field-embedding rows a batch reads (sparkps's embeddingL2)")
    p.add_argument("--warmup-rows", type=int, default=0, help="an untimed pass of a throwaway model over this many "
                   "training rows first (0: none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    if not 0.0 <= args.dropout < 1.0:
        p.error("--dropout must be in [0, 1), got %r" % args.dropout)
    if not args.embedding_l2 >= 0.0:
        p.error("--embedding-l2 must be >= 0, got %r" % args.embedding_l2)
    return args


def build(torch, args, vocab, fields, width):
    """(model, optimizers) of ``args``: DeepFM (or FM) over ``vocab`` table rows, ``fields`` id fields and
    ``width`` numeric columns."""
    from torch import nn
    hidden = [int(h) for h in args.hidden.split(",") if h]
    sparse = args.embeddings == "sparse"

    class DeepFM(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear_rows = nn.Embedding(vocab, 1, sparse=sparse)
            self.rows = nn.Embedding(vocab, args.dim, sparse=sparse)
            nn.init.normal_(self.rows.weight, std=0.2)
            nn.init.normal_(self.linear_rows.weight, std=0.2)
            self.linear = nn.Linear(1 + width, 1)
            layers, inputs = [], fields * args.dim + width
            for units in hidden:
                layers += [nn.Linear(inputs, units), nn.ReLU()]
                if args.dropout:
                    layers.append(nn.Dropout(args.dropout))
                inputs = units
            self.deep = nn.Sequential(*layers, nn.Linear(inputs, 1)) if args.model == "deepfm" else None

        def forward(self, x_ids, x_num):
            """(logits, L2 term): the L2 term is 0.5 * embedding_l2 * the squared norm of the field-embedding rows
            the batch reads, each unique row once (its gradient: embedding_l2 * row, as sparkps's wd)."""
            first = self.linear(torch.cat([self.linear_rows(x_ids).sum(dim=1), x_num], dim=1))
            if args.embedding_l2:
                unique, inverse = torch.unique(x_ids, return_inverse=True)
                read = self.rows(unique)
                v, l2 = read[inverse], 0.5 * args.embedding_l2 * read.pow(2).sum()
            else:
                v, l2 = self.rows(x_ids), None
            fm = 0.5 * (v.sum(dim=1).pow(2) - v.pow(2).sum(dim=1)).sum(dim=1, keepdim=True)
            if self.deep is None:
                return (first + fm).squeeze(1), l2
            return (first + fm + self.deep(torch.cat([v.flatten(1), x_num], dim=1))).squeeze(1), l2

    model = DeepFM()
    if not sparse:
        return model, [torch.optim.Adam(model.parameters(), lr=args.lr)]
    tables = [model.rows.weight, model.linear_rows.weight]
    dense = [p for p in model.parameters() if all(p is not t for t in tables)]
    return model, [torch.optim.SparseAdam(tables, lr=args.lr), torch.optim.Adam(dense, lr=args.lr)]


def train(torch, model, optimizers, x_ids, x_num, y, rows, epochs, batch_size, generator):
    """``epochs`` shuffled passes of mini-batch steps over the first ``rows`` rows (blocks until done)."""
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    for _ in range(epochs):
        order = torch.randperm(rows, generator=generator)
        for lo in range(0, rows, batch_size):
            batch = order[lo:lo + batch_size]
            for optimizer in optimizers:
                optimizer.zero_grad(set_to_none=True)
            logits, l2 = model(x_ids[batch], x_num[batch])
            loss = loss_fn(logits, y[batch])
            (loss if l2 is None else loss + l2).backward()
            for optimizer in optimizers:
                optimizer.step()
    model.eval()


def main(argv=None):
    args = parse_args(argv)
    import torch
    torch.set_num_threads(args.threads)
    data = np.load(args.data)
    ids, numeric, labels, rows = data["ids"], data["numeric"], data["labels"], int(data["train_rows"])
    valid_rows = int(data["valid_rows"]) if "valid_rows" in data.files else 0
    vocab, fields, width = int(ids.max()) + 1, ids.shape[1], numeric.shape[1]
    x_ids, x_num = torch.from_numpy(ids.astype(np.int64)), torch.from_numpy(numeric.astype(np.float32))
    y = torch.from_numpy(labels.astype(np.float32))
    if args.warmup_rows:
        torch.manual_seed(args.seed + 1)
        model, optimizers = build(torch, args, vocab, fields, width)
        train(torch, model, optimizers, x_ids, x_num, y, min(args.warmup_rows, rows), 1, args.batch_size,
              torch.Generator().manual_seed(args.seed + 1))
    torch.manual_seed(args.seed)
    model, optimizers = build(torch, args, vocab, fields, width)
    start = time.perf_counter()
    train(torch, model, optimizers, x_ids, x_num, y, rows, args.epochs, args.batch_size,
          torch.Generator().manual_seed(args.seed))
    seconds = time.perf_counter() - start
    with torch.no_grad():
        scores = torch.sigmoid(model(x_ids[rows:], x_num[rows:])[0]).numpy().astype(np.float64)
    valid, test = scores[:valid_rows], scores[valid_rows:]
    p_test = np.clip(test, 1e-15, 1 - 1e-15)
    y_test = labels[rows + valid_rows:].astype(np.float64)
    logloss = float(-np.mean(y_test * np.log(p_test) + (1 - y_test) * np.log(1 - p_test)))
    out = {"auc": auc(y_test, test), "logloss": logloss, "fit_s": seconds,
           "samples_per_s": rows * args.epochs / seconds, "threads": args.threads, "torch": torch.__version__,
           "embeddings": args.embeddings}
    if valid_rows:
        out["valid_auc"] = auc(labels[rows:rows + valid_rows].astype(np.float64), valid)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
