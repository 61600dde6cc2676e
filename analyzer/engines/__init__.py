"""Where the logs already are: BigQuery (``bigquery``), Cloud Logging and the Vertex AI API
live (``live``), and a Dask cluster for the fast scan (``dask``)."""
