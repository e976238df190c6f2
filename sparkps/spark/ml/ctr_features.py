"""CTR DataFrames to feature rows: categorical columns hashed with their field into 64-bit ids (see
``sparkps.ctr.hashing``), multi-valued columns (arrays, or strings joined by ``separator``) hashed value by
value, numeric columns standardised: the network's typed inputs (ids uint64, numbers float32, the FeatureSpec's
``input_parts``, a ``TypedInputs``).

    featurizer = CTRFeaturizer(['C1', 'C2'], ['I1'], multi_value_cols=['tags'])
    stats = featurizer.fit_stats(train_df)              # one aggregation: numeric statistics, multi-valued widths
    featurizer.spec(stats, embedding_dim=8)             # the FeatureSpec of the inputs
    frame, reader = featurizer.training_input(train_df, stats, 'click')   # what a fit's tasks read

Hashing runs in the executors (Arrow over the feature columns only, ``sparkps.spark.task.ctr_columns``: the fit's
record batches, the model's scoring UDF); nothing is collected but the statistics. A categorical
column may hold strings or integers (the id of ``7`` is the id of ``"7"``); a null is the field's "missing" value;
an empty multi-valued cell holds no id (its pooled embedding is zeros). With ``hash_ids=False`` the categorical
cells are table rows already (Angel's dummy format) in [0, index_range).
Column errors name the column.
"""
import numpy as np

from sparkps.ctr.numeric import NumericStats
from sparkps.errors import ConfigError, DataError

MAX_VALUES = 64       # widest multi-valued field: a row's ids past it are dropped
HELD_OUT_TMP = "__sparkps_held_out"


class CTRFeaturizer:
    """Which columns are categorical, multi-valued and numeric. Plain values only, so a task closure can capture
    it."""

    def __init__(self, categorical_cols, numeric_cols=(), index_range=None, log_numeric=True, hash_ids=True,
                 multi_value_cols=(), separator=","):
        self.hash_ids = bool(hash_ids)
        self.categorical_cols = list(categorical_cols)
        self.numeric_cols = list(numeric_cols)
        self.multi_value_cols = list(multi_value_cols)
        self.index_range, self.log_numeric, self.separator = index_range, bool(log_numeric), str(separator)
        if not self.categorical_cols and not self.multi_value_cols:
            raise ConfigError("categoricalCols: a CTR model needs at least one categorical column")
        named = self.categorical_cols + self.numeric_cols + self.multi_value_cols
        repeated = sorted({c for c in named if named.count(c) > 1})
        if repeated:
            raise ConfigError("column(s) %s are named twice among categorical, numeric and multi-valued columns"
                              % repeated)
        if not self.hash_ids and (self.multi_value_cols or not index_range):
            raise ConfigError("hash_ids=False (feature indices) needs index_range and no multi-valued columns")

    def check_columns(self, df, label_col=None):
        """DataError naming the first column the DataFrame lacks, a numeric column that is not numeric, or a
        multi-valued column that is neither an array nor a string."""
        from pyspark.sql.types import BooleanType, NumericType
        wanted = self.categorical_cols + self.numeric_cols + self.multi_value_cols + ([label_col] if label_col else [])
        missing = [c for c in wanted if c not in df.columns]
        if missing:
            raise DataError("DataFrame has no column(s) %s; columns are %s" % (missing, df.columns))
        for name in self.numeric_cols:
            if not isinstance(df.schema[name].dataType, NumericType):
                raise DataError("numeric column %r has type %s" % (name, df.schema[name].dataType.simpleString()))
        for name in self.multi_value_cols:
            self._value_count(df, name)          # DataError naming a multi-valued column of another type
        kind = df.schema[label_col].dataType if label_col else None
        if kind is not None and not isinstance(kind, (NumericType, BooleanType)):     # MLlib's own words
            raise DataError("Column %s must be of type numeric but was actually of type %s. (A click label is 0/1, "
                            "or two strings, indexed as RFormula does.)" % (label_col, kind.simpleString()))

    def _value_count(self, df, name):
        """A Spark expression: the number of values in multi-valued column ``name`` (array or joined string)."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import ArrayType, StringType
        kind = df.schema[name].dataType
        if isinstance(kind, ArrayType):
            return F.coalesce(F.size(F.col(name)), F.lit(0))
        if not isinstance(kind, StringType):
            raise DataError("multi-valued column %r must be an array or a string joined by %r, got %s"
                            % (name, self.separator, kind.simpleString()))
        parts = F.split(F.col(name), _regex_quote(self.separator))
        return F.coalesce(F.size(F.filter(parts, lambda x: x != "")), F.lit(0))

    def fit_stats(self, df, label_col=None, held_out=None):
        """NumericStats of the numeric columns over ``df``, with the width of each multi-valued column (its most
        values in a row, at most MAX_VALUES) in ``.widths`` (one Spark aggregation; nulls and NaN count as
        missing). With ``label_col`` the same aggregation counts the rows and the null and non-finite labels
        (``.label_facts``, for ``check_labels``). ``held_out``: a boolean column of ``df`` true on the rows held out
        for validation (``input_rows.held_out_rows``): the statistics, widths and ``.label_facts`` are then those
        of the other rows, and the same aggregation counts the held-out rows' labels (``.validation_facts``; None
        without ``held_out``). Blocks on that one aggregation."""
        from pyspark.sql import functions as F
        self.check_columns(df, label_col)
        if held_out is not None:       # a column of its own: each row's draw is hashed once, not per aggregate
            df = df.withColumn(HELD_OUT_TMP, held_out)
            held_out = F.col(HELD_OUT_TMP)
        training = None if held_out is None else ~held_out
        exprs = _label_facts(label_col, training) if label_col else []
        if label_col and held_out is not None:
            exprs += _label_facts(label_col, held_out)
        labels = len(exprs)
        for name in self.numeric_cols:
            value = F.col(name).cast("double")
            value = F.when(F.isnan(value), None).otherwise(value)
            if self.log_numeric:
                value = F.signum(value) * F.log1p(F.abs(value))
            value = value if training is None else F.when(training, value)
            exprs += [F.count(value), F.sum(value), F.sum(value * value)]
        exprs += [F.max(self._value_count(df, name) if training is None else
                        F.when(training, self._value_count(df, name))) for name in self.multi_value_cols]
        row = df.agg(*exprs).collect()[0] if exprs else []
        facts = [int(v or 0) for v in row[:labels]]
        cells = [0.0 if v is None else float(v) for v in row[labels:]]
        numeric = cells[:3 * len(self.numeric_cols)]
        infinite = [c for j, c in enumerate(self.numeric_cols) if not np.isfinite(numeric[3 * j + 1:3 * j + 3]).all()]
        if infinite:
            raise DataError("numeric column(s) %s hold an infinite value (or sums past the float range); replace it "
                            "or drop the column" % infinite)
        stats = NumericStats(self.numeric_cols, numeric[0::3], numeric[1::3], numeric[2::3], self.log_numeric)
        counts = cells[3 * len(self.numeric_cols):]
        stats.widths = {name: int(min(max(c, 1), MAX_VALUES)) for name, c in zip(self.multi_value_cols, counts)}
        stats.label_facts = dict(zip(LABEL_FACTS, facts)) if label_col else None
        stats.validation_facts = dict(zip(LABEL_FACTS, facts[len(LABEL_FACTS):])) \
            if label_col and held_out is not None else None
        return stats

    def spec(self, stats, **network):
        """The FeatureSpec of these columns (multi-valued widths from ``stats``); ``network``: its other fields
        (embedding_dim, hidden_units, pooling, tables, ...)."""
        from sparkps.ctr.features import FeatureSpec
        widths = dict(stats.widths)
        missing = [c for c in self.multi_value_cols if c not in widths]
        if missing:
            raise ConfigError("no width for multi-valued column(s) %s: compute the statistics with fit_stats"
                              % missing)
        return FeatureSpec(categorical=self.categorical_cols, numeric=self.numeric_cols,
                           multi_valued={c: widths[c] for c in self.multi_value_cols}, **network)

    def columns(self, stats, spec=None):
        """The ColumnFeaturizer that reads these columns (in the order ``feature_columns`` selects them)."""
        from sparkps.spark.task.ctr_columns import ColumnFeaturizer
        return ColumnFeaturizer(self.categorical_cols, self.multi_value_cols, len(self.numeric_cols),
                                stats.to_dict(), spec or self.spec(stats), hash_ids=self.hash_ids,
                                index_range=self.index_range, separator=self.separator)

    def feature_columns(self):
        """Spark columns the featurizer reads: categorical, multi-valued, then numeric ones cast to double."""
        from pyspark.sql import functions as F
        return [F.col(c) for c in self.categorical_cols + self.multi_value_cols] + \
            [F.col(c).cast("double").alias(c) for c in self.numeric_cols]

    def training_input(self, df, stats, label_col, spec=None):
        """``(frame, reader)``: ``df``'s feature columns and its label (float, named ``label_col``), and the
        CTRReader a fit's tasks read their record batches with (``SparkTrainer.fit(frame, reader=reader)``): ids as
        64-bit integers and numbers as float32 straight into the batch arrays. Lazy; labels are checked by
        ``check_labels``."""
        from pyspark.sql import functions as F

        from sparkps.spark.common.typed_inputs import TypedInputs
        from sparkps.spark.task.ctr_columns import CTRReader
        self.check_columns(df, label_col)
        columns = self.columns(stats, spec)
        reader = CTRReader(columns, TypedInputs(columns.spec.input_parts()), label_col)
        return df.select(*self.feature_columns(), F.col(label_col).cast("float").alias(label_col)), reader

    def check_labels(self, df, label_col, facts=None, rows_of=None, both_classes=False):
        """DataError for no rows, or naming the first row whose label is null or not finite; with ``both_classes``
        (the training rows) also when every label is the same (nothing can be learned, no AUC exists). ``facts``:
        the ``label_facts`` of ``fit_stats(df, label_col)``; None: one aggregation over the label column. The error
        path finds the row in ``rows_of`` (default ``df``): the input a split ``df`` was drawn from, so the row
        number is the user's."""
        from sparkps.spark.driver import schema
        facts = facts if facts is not None else dict(zip(LABEL_FACTS, [int(v or 0) for v in df.agg(
            *_label_facts(label_col)).first()]))
        source = df if rows_of is None else rows_of
        schema.check_labels(facts, None, where=lambda key: schema.first_bad_label(source, label_col, key))
        if facts.get("not_binary"):
            row, value = schema.first_bad_label(source, label_col, "binary")
            raise DataError("row %s: label %r in column %r is not 0 or 1 (%d such labels): a click label is 0 or 1"
                            % (row, value, label_col, facts["not_binary"]))
        if both_classes and facts["clicks"] in (0, facts["rows"]):
            raise DataError("every training label of column %r is %d (%d rows): a click model needs rows of both "
                            "classes (nothing can be learned and no AUC exists)"
                            % (label_col, 1 if facts["clicks"] else 0, facts["rows"]))
        return facts["rows"]

    def to_dict(self):
        return {"categorical_cols": self.categorical_cols, "numeric_cols": self.numeric_cols,
                "multi_value_cols": self.multi_value_cols, "index_range": self.index_range,
                "log_numeric": self.log_numeric, "hash_ids": self.hash_ids, "separator": self.separator}


def indexed_click_label(df, label_col, classes=None):
    """``(df, classes)``: a string label column of two values indexed as MLlib's RFormula indexes a string label and
    as jobs/train_ctr.py does (StringIndexer's order: the most frequent value -> 0, the other -> 1, ties by name),
    with ``classes`` ``[value of 0, value of 1]``; a null stays null (named with its row by ``check_labels``).
    Any other label column is returned as it is, with classes None. ConfigError naming the column when it holds
    another number of distinct strings. Blocks for one Spark job (the label counts) when the column holds strings.
    ``classes`` (a warm start: the initial model's ``labelClasses``) indexes the strings as that model did; a string
    outside them is then a ConfigError naming the column (a 0/1 column is taken as indexed by them already)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType
    strings = label_col in df.columns and isinstance(df.schema[label_col].dataType, StringType)
    if classes and label_col in df.columns:
        return _indexed_as(df, label_col, list(classes), strings)
    if not strings:
        return df, None
    from pyspark.ml.feature import StringIndexer
    names = list(StringIndexer(inputCol=label_col, outputCol=label_col + "__indexed",
                               stringOrderType="frequencyDesc").fit(df).labels)
    classes = two_click_classes(label_col, names)
    y = F.col(label_col)
    return df.withColumn(label_col, F.when(y == classes[0], 0.0).when(y == classes[1], 1.0)), classes


def _indexed_as(df, label_col, classes, strings):
    """``df`` with its string label column indexed by ``classes`` (``[value of 0, value of 1]``), and the classes."""
    from pyspark.sql import functions as F
    if not strings:          # indexed by the caller already (0/1), as jobs/train_ctr.py indexes a string label
        return df, classes
    y = F.col(label_col)
    other = df.where(y.isNotNull() & ~y.isin(*classes)).select(label_col).limit(1).collect()
    if other:
        raise ConfigError("label column %r holds %r, which the initial model's labels %s (labelClasses) do not "
                          "include" % (label_col, other[0][0], classes))
    return df.withColumn(label_col, F.when(y == classes[0], 0.0).when(y == classes[1], 1.0)), classes


def two_click_classes(label_col, names):
    """``names``, the distinct strings of a label column in index order, when they are two; ConfigError naming the
    column otherwise (a click label has two classes)."""
    if len(names) != 2:
        raise ConfigError("label column %r holds %d distinct strings %s; a click label has two (or is 0/1)"
                          % (label_col, len(names), list(names[:5])))
    return list(names)


LABEL_FACTS = ("rows", "nulls", "non_finite", "not_binary", "clicks")


def _label_facts(label_col, where=None):
    """Aggregations: rows, null labels, non-finite labels (the facts ``schema.check_labels`` reads), finite labels
    other than 0 and 1, labels of 1; ``where`` (a boolean column): of the rows where it holds only."""
    from pyspark.sql import functions as F
    y = F.col(label_col).cast("double")
    finite = y.isNotNull() & ~F.isnan(y) & (F.abs(y) != float("inf"))

    def rows(test):
        return F.sum(F.when(test if where is None else where & test, 1).otherwise(0))
    return [F.count(F.lit(1)) if where is None else F.count(F.when(where, 1)), rows(y.isNull()),
            rows(y.isNotNull() & (F.isnan(y) | (F.abs(y) == float("inf")))), rows(finite & ~y.isin(0.0, 1.0)),
            rows(y == 1.0)]


def _regex_quote(text):
    import re
    return re.escape(text)
