"""The Profile and the leaves every layer reads: samples, metrics, errors, files."""
