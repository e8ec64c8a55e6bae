"""A Profile judged: its budgets, its baseline, and the noise floor between them."""
