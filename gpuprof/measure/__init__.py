"""Measuring a variant: correctness check, timing (with harness.cu), worker isolation."""
