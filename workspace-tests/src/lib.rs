//! End-to-end tests of the real `mixseek` binary live in `tests/`.
