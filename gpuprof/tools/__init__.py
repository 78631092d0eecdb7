"""External programs: build their argument lists, run them with a timeout, keep their output."""
