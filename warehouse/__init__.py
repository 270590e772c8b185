"""The DuckDB warehouse: schema, connections, ingest and named queries. The only place that
speaks SQL."""
