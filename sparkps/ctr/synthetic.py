"""A documented generator of Criteo-shaped click data with a planted model, for tests, demos and
benchmarks (the labels' true click probabilities are known, so a trained model can be held to the AUC of
the model that made the data).

For row n and categorical field f (f < num_fields) the value's rank is ``(Zipf(zipf) - 1) mod vocab``
(a few values are very frequent, most are rare, as in ad logs); the cell holds that rank's 8-digit hex
token. Numeric column d holds an integer count ``floor(exp(N(1, 1)))``, empty with probability
``missing``. The planted logit is::

    bias + sum_f w[f, rank_f] + fm_scale * sum_{f<g} <v[f, rank_f], v[g, rank_g]>
         + deep_scale * relu(V . A) . c + sum_d u_d * standardised(log1p(count_d))   (0 for a missing count)

with w ~ N(0, linear_scale), v ~ N(0, 1/sqrt(factors)), A, c, u ~ N(0, 1/sqrt(width)) (fixed by
``seed``), and the label is Bernoulli(sigmoid(logit)). ``deep_scale=0`` plants an FM, ``fm_scale=0`` and
``deep_scale=0`` a logistic regression.

    data = planted_ctr(20000, num_fields=6, num_numeric=2, vocab=50, seed=1)
    data.categorical   # (rows, 6) str; data.numeric (rows, 2) float with NaN; data.labels; data.probability
    data.ranks         # (rows, 6) int: the value ranks behind the tokens (field * vocab + rank: Angel's dummy)
    write_criteo_tsv(data, 'train.tsv')        # needs num_fields=26, num_numeric=13
"""
from collections import namedtuple

import numpy as np

PlantedCTR = namedtuple("PlantedCTR", ["labels", "probability", "categorical", "numeric", "fields",
                                       "numeric_names", "ranks"])


def _tokens(field, ranks):
    mixed = (ranks.astype(np.uint64) * np.uint64(2654435761) + np.uint64(field * 40503 + 17)) % np.uint64(1 << 32)
    return np.char.mod("%08x", mixed.astype(np.int64))


def planted_ctr(rows, num_fields=26, num_numeric=13, vocab=1000, zipf=1.2, factors=4, linear_scale=0.7,
                fm_scale=1.0, deep_scale=1.0, hidden=16, bias=-1.0, missing=0.05, seed=0):
    """Rows of planted click data (see the module docstring); the same seed gives the same data."""
    model_rng = np.random.default_rng([seed, 0])
    w = model_rng.normal(0, linear_scale, (num_fields, vocab))
    v = model_rng.normal(0, 1 / np.sqrt(factors), (num_fields, vocab, factors))
    a = model_rng.normal(0, 1 / np.sqrt(num_fields * factors), (num_fields * factors, hidden))
    c = model_rng.normal(0, 1 / np.sqrt(hidden), hidden)
    u = model_rng.normal(0, 1 / np.sqrt(max(num_numeric, 1)), num_numeric)
    rng = np.random.default_rng([seed, 1])
    ranks = (rng.zipf(zipf, (rows, num_fields)) - 1) % vocab
    fields = np.arange(num_fields)
    logit = bias + w[fields, ranks].sum(axis=1)
    e = v[fields, ranks]                                           # (rows, fields, factors)
    total = e.sum(axis=1)
    logit += fm_scale * 0.5 * ((total * total).sum(axis=1) - (e * e).sum(axis=(1, 2)))
    logit += deep_scale * np.maximum(e.reshape(rows, -1) @ a, 0) @ c
    counts = np.floor(np.exp(rng.normal(1, 1, (rows, num_numeric))))
    absent = rng.random((rows, num_numeric)) < missing
    logit += np.where(absent, 0.0, (np.log1p(counts) - 1.3) / 0.8) @ u      # a missing count carries no signal
    numeric = np.where(absent, np.nan, counts)
    probability = 1 / (1 + np.exp(-logit))
    labels = (rng.random(rows) < probability).astype(np.float32)
    categorical = np.stack([_tokens(f, ranks[:, f]) for f in fields], axis=1) if num_fields else \
        np.zeros((rows, 0), str)
    return PlantedCTR(labels, probability, categorical, numeric,
                      tuple("C%d" % (f + 1) for f in fields), tuple("I%d" % (d + 1) for d in range(num_numeric)), ranks)


def write_criteo_tsv(data, path):
    """Write planted data in Criteo's TSV layout (label, I1-I13, C1-C26; missing counts as empty cells)."""
    if data.categorical.shape[1] != 26 or data.numeric.shape[1] != 13:
        raise ValueError("Criteo's layout needs 13 numeric and 26 categorical columns, got %d and %d"
                         % (data.numeric.shape[1], data.categorical.shape[1]))
    with open(path, "w", encoding="utf-8") as out:
        for label, counts, cats in zip(data.labels, data.numeric, data.categorical):
            ints = ["" if np.isnan(x) else str(int(x)) for x in counts]
            out.write("\t".join([str(int(label))] + ints + list(cats)) + "\n")
