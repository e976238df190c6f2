"""The PyTorch reference rows of the CTR benchmarks: the same networks as ``nets.build('deepfm', ...)`` and
``nets.build('fm', ...)`` (a first-order weight per value, an FM over the field embeddings, and for DeepFM an MLP over
the embeddings and the numeric columns) written in PyTorch, trained in one process (``torch.set_num_threads``),
Adam, BCE loss, shuffled batches.

torch is a development extra: bench_ctr and bench_ctr_quality run this file with a Python that has torch
(``--torch-python``; by default their own when torch imports there), handing the rows over as one ``.npz``
(``ids``: the hashed 64-bit ids of each field already mapped to 0..n-1, which favours this row; ``numeric``,
``labels``, ``train_rows``). It prints one JSON line: test AUC and logloss, fit seconds, samples/s, threads.

    python benchmarks/torch_deepfm.py DATA.npz --epochs 3 --batch-size 2048 --lr 0.02 --threads 2
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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=2048)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--dim", type=int, default=4)
    p.add_argument("--hidden", default="32,16", help="MLP widths of DeepFM's deep part")
    p.add_argument("--model", choices=("deepfm", "fm"), default="deepfm")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    import torch
    from torch import nn
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    hidden = [int(h) for h in args.hidden.split(",") if h]
    data = np.load(args.data)
    ids, numeric, labels, rows = data["ids"], data["numeric"], data["labels"], int(data["train_rows"])
    vocab, fields, width = int(ids.max()) + 1, ids.shape[1], numeric.shape[1]

    class DeepFM(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear_rows = nn.Embedding(vocab, 1)
            self.rows = nn.Embedding(vocab, args.dim)
            nn.init.normal_(self.rows.weight, std=0.2)
            nn.init.normal_(self.linear_rows.weight, std=0.2)
            self.linear = nn.Linear(1 + width, 1)
            layers, inputs = [], fields * args.dim + width
            for units in hidden:
                layers += [nn.Linear(inputs, units), nn.ReLU()]
                inputs = units
            self.deep = nn.Sequential(*layers, nn.Linear(inputs, 1)) if args.model == "deepfm" else None

        def forward(self, x_ids, x_num):
            first = self.linear(torch.cat([self.linear_rows(x_ids).sum(dim=1), x_num], dim=1))
            v = self.rows(x_ids)
            fm = 0.5 * (v.sum(dim=1).pow(2) - v.pow(2).sum(dim=1)).sum(dim=1, keepdim=True)
            if self.deep is None:
                return (first + fm).squeeze(1)
            return (first + fm + self.deep(torch.cat([v.flatten(1), x_num], dim=1))).squeeze(1)

    model = DeepFM()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.BCEWithLogitsLoss()
    x_ids, x_num = torch.from_numpy(ids.astype(np.int64)), torch.from_numpy(numeric.astype(np.float32))
    y = torch.from_numpy(labels.astype(np.float32))
    generator = torch.Generator().manual_seed(args.seed)
    start = time.perf_counter()
    for _ in range(args.epochs):
        order = torch.randperm(rows, generator=generator)
        for lo in range(0, rows, args.batch_size):
            batch = order[lo:lo + args.batch_size]
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(x_ids[batch], x_num[batch]), y[batch]).backward()
            optimizer.step()
    seconds = time.perf_counter() - start
    with torch.no_grad():
        scores = torch.sigmoid(model(x_ids[rows:], x_num[rows:])).numpy()
    p_test = np.clip(scores.astype(np.float64), 1e-15, 1 - 1e-15)
    y_test = labels[rows:].astype(np.float64)
    logloss = float(-np.mean(y_test * np.log(p_test) + (1 - y_test) * np.log(1 - p_test)))
    print(json.dumps({"auc": auc(labels[rows:], scores.astype(np.float64)), "logloss": logloss, "fit_s": seconds,
                      "samples_per_s": rows * args.epochs / seconds, "threads": args.threads,
                      "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
