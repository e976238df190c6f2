"""A trained model on Spark: ``SparkModel`` (spark_model.py), the predictor that runs in Spark's Python
workers (predictor.py), DataFrame scoring with UDFs (udf_scoring.py) and the sparse tables' rows a fit returns
(table_rows.py)."""
