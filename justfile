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

# The real-server tier: mixseek against llama.cpp's server with a small model (installed once
# into ~/.cache/mixseek/llama-server; see docs/ARCHITECTURE.md, "Test tiers")
real-server-tests:
    scripts/real-server-tests

# The original tier: our database files against the original Python MixSeek's own code and its
# files against ours (mixseek-core from PyPI, installed once into ~/.cache/mixseek/original-tier)
original-tests:
    scripts/original-tests

# The CPU of one competition (TEAMS teams × 5 rounds) run by the original Python MixSeek and by
# mixseek, side by side against the same fake server (docs/benchmarks.md)
compare-original teams="50":
    cargo build --workspace --bins
    scripts/compare-original {{teams}}

# Lints as CI runs them
lint:
    cargo clippy --workspace --all-targets -- -D warnings

# Format the code
fmt:
    cargo fmt --all

# Benchmarks (results and commands in docs/benchmarks.md). `--workspace` keeps cargo's feature
# resolution identical to the test build, so nothing (DuckDB above all) is compiled again.
bench:
    cargo build --workspace --bins
    cargo bench --workspace --profile dev --bench llm_overhead
    cargo bench --workspace --profile dev --bench render
    cargo bench --workspace --profile dev --bench evaluate
    cargo bench --workspace --profile dev --bench store
    cargo bench --workspace --profile dev --bench exec
    cargo bench --workspace --profile dev --bench ui
    cargo bench --workspace --profile dev --bench experiment
