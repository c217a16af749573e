//! The store's integration tests, one test executable (each executable links DuckDB; see
//! docs/ARCHITECTURE.md, "Test layout"): a real DuckDB file written and read back.

mod arena;
mod common;
mod durability;
mod experiment_arena;
mod experiment_store;
mod export;
mod hostile;
mod migration;
mod report_formats;
mod store;
mod unevaluated;
