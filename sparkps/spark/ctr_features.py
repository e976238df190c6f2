"""CTR DataFrames to feature rows: categorical columns hashed with their field into 64-bit ids (see
``sparkps.train.io.hashing``) and reduced to table rows, numeric columns standardised, all side by side in
one float array per row (``FeatureSpec(packed=True)``'s layout).

    featurizer = CTRFeaturizer(['C1', 'C2'], ['I1'], num_buckets=1 << 15)
    stats = featurizer.fit_stats(train_df)              # one aggregation over the numeric columns
    rows = featurizer.transform(train_df, stats, 'features')

Hashing runs in the executors (a pandas UDF over the categorical and numeric columns only); nothing is
collected but the statistics. A categorical column may hold strings or integers (the id of ``7`` is the id
of ``"7"``); a null is the field's "missing" value. Column errors name the column.
"""
import numpy as np

from sparkps.errors import ConfigError, DataError
from sparkps.train.io.numeric import NumericStats


class CTRFeaturizer:
    """Which columns are categorical and numeric, and the table size ids are reduced to. Plain values only,
    so a task closure can capture it."""

    def __init__(self, categorical_cols, numeric_cols=(), num_buckets=1 << 15, log_numeric=True, hash_ids=True):
        self.hash_ids = bool(hash_ids)      # False: the categorical cells are row indices already (Angel's dummy)
        self.categorical_cols = list(categorical_cols)
        self.numeric_cols = list(numeric_cols)
        self.num_buckets, self.log_numeric = int(num_buckets), bool(log_numeric)
        if not self.categorical_cols:
            raise ConfigError("categoricalCols: a CTR model needs at least one categorical column")
        both = set(self.categorical_cols) & set(self.numeric_cols)
        if both:
            raise ConfigError("column(s) %s are both categorical and numeric" % sorted(both))

    @property
    def width(self):
        return len(self.categorical_cols) + len(self.numeric_cols)

    def check_columns(self, df, label_col=None):
        """DataError naming the first column the DataFrame lacks, or a numeric column that is not numeric."""
        from pyspark.sql.types import NumericType
        wanted = self.categorical_cols + self.numeric_cols + ([label_col] if label_col else [])
        missing = [c for c in wanted if c not in df.columns]
        if missing:
            raise DataError("DataFrame has no column(s) %s; columns are %s" % (missing, df.columns))
        for name in self.numeric_cols:
            if not isinstance(df.schema[name].dataType, NumericType):
                raise DataError("numeric column %r has type %s" % (name, df.schema[name].dataType.simpleString()))

    def fit_stats(self, df):
        """NumericStats of the numeric columns over ``df`` (one Spark aggregation; nulls and NaN count as
        missing)."""
        from pyspark.sql import functions as F
        self.check_columns(df)
        if not self.numeric_cols:
            return NumericStats((), [], [], [], self.log_numeric)
        exprs = []
        for name in self.numeric_cols:
            value = F.col(name).cast("double")
            value = F.when(F.isnan(value), None).otherwise(value)
            if self.log_numeric:
                value = F.signum(value) * F.log1p(F.abs(value))
            exprs += [F.count(value), F.sum(value), F.sum(value * value)]
        row = df.agg(*exprs).collect()[0]
        cells = [0.0 if v is None else float(v) for v in row]
        return NumericStats(self.numeric_cols, cells[0::3], cells[1::3], cells[2::3], self.log_numeric)

    def transform(self, df, stats, output_col):
        """``df`` plus ``output_col``: array<float> of bucket rows then standardised numeric values. Lazy."""
        import pandas as pd
        from pyspark.sql import functions as F
        from pyspark.sql.types import ArrayType, FloatType
        self.check_columns(df)
        if output_col in df.columns:
            raise DataError("output column %r already exists in the DataFrame" % output_col)
        saved, categorical, buckets = stats.to_dict(), list(self.categorical_cols), self.num_buckets
        hash_ids = self.hash_ids

        def rows_of(name, col):
            from sparkps.train.io.hashing import bucket, hash_column
            if hash_ids:
                return bucket(hash_column(name, col.to_numpy(dtype=object)), buckets)
            index = col.to_numpy(dtype=np.float64, na_value=-1.0)
            if index.size and (index.min() < 0 or index.max() >= buckets or (index != np.floor(index)).any()):
                raise DataError("categorical column %r must hold feature indices in [0, %d) (hash_ids=False), got "
                                "values in [%s, %s]" % (name, buckets, index.min(), index.max()))
            return index

        def featurize(*columns):
            from sparkps.train.io.numeric import NumericStats as Stats
            cats, nums = columns[:len(categorical)], columns[len(categorical):]
            parts = [rows_of(name, col)[:, None].astype(np.float32) for name, col in zip(categorical, cats)]
            if nums:
                numeric = np.stack([col.to_numpy(dtype=np.float64, na_value=np.nan) for col in nums], axis=1)
                parts.append(Stats.from_dict(saved).transform(numeric))
            return pd.Series(list(np.concatenate(parts, axis=1)))

        udf = F.pandas_udf(featurize, ArrayType(FloatType()))
        numeric = [F.col(c).cast("double") for c in self.numeric_cols]
        return df.withColumn(output_col, udf(*[F.col(c) for c in self.categorical_cols], *numeric))

    def to_dict(self):
        return {"categorical_cols": self.categorical_cols, "numeric_cols": self.numeric_cols,
                "num_buckets": self.num_buckets, "log_numeric": self.log_numeric, "hash_ids": self.hash_ids}
