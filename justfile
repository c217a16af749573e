# Every command a user or CI needs. One cargo profile (dev, with DuckDB optimised) for
# everything, and a persistent target directory, so DuckDB's C++ is compiled once.
export CARGO_TARGET_DIR := env_var_or_default("CARGO_TARGET_DIR", env_var("HOME") + "/.cache/mixseek/target")

# Build the mixseek binary
build:
    cargo build -p mixseek-cli

# Run every test (the README's test command)
test:
    cargo test --workspace

# The offline quick-start competition (the README's first command)
demo:
    cargo run -p mixseek-cli -- exec "Write a haiku about autumn" -c configs/quickstart/orchestrator.toml

# Lints as CI runs them
lint:
    cargo clippy --workspace --all-targets -- -D warnings

# Format the code
fmt:
    cargo fmt --all

# Benchmarks (results and commands in docs/benchmarks.md)
bench:
    cargo bench -p mixseek-llm --profile dev
    cargo bench -p mixseek-prompt --profile dev
    cargo bench -p mixseek-evaluator --profile dev
    cargo bench -p mixseek-store --profile dev
