"""Why it is slow: rules, per-core thresholds and costs, the Assessment."""
