"""Validation rows held out of a DataFrame (sparkps.spark.driver.input_rows.held_out, used by both estimators)."""
from sparkps.spark.driver.input_rows import held_out


def test_held_out_rows_keep_the_input_order_and_do_not_overlap(spark):
    # label first: DataFrame.randomSplit would sort each partition by it, and the first epoch reads rows in order
    rows = [(i % 2, i) for i in range(400)]
    df = spark.createDataFrame(rows, ["label", "row"]).coalesce(1)
    train, validation = held_out(df, 0.25, seed=3)
    kept, held = train.collect(), validation.collect()
    assert sorted(r.row for r in kept + held) == list(range(400))
    assert 50 <= len(held) <= 150
    assert [r.row for r in kept] == sorted(r.row for r in kept)      # input order, not sorted by label
    assert held_out(df, 0.0) == (df, None)


def test_the_same_seed_holds_out_the_same_rows_whatever_the_partitioning_and_order(spark):
    from pyspark.ml.linalg import Vectors
    rows = [(Vectors.dense([i, i % 7]), float(i % 2), i) for i in range(300)]
    one = spark.createDataFrame(rows, ["features", "label", "row"]).coalesce(1)
    other = spark.createDataFrame(rows[::-1], ["features", "label", "row"]).repartition(3)

    def held(df, seed):
        train, validation = held_out(df, 0.2, seed=seed)
        return sorted(r.row for r in validation.collect()), train.count()
    assert held(one, 4) == held(other, 4)
    assert held(one, 4)[0] != held(one, 5)[0]
    assert len(held(one, 4)[0]) + held(one, 4)[1] == 300
