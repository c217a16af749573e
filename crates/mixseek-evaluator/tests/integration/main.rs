//! The evaluator's integration tests, one test executable (see docs/ARCHITECTURE.md, "Test
//! layout"): LLM-judge and command metrics against fake servers and scripts.

mod command;
mod common;
mod evaluate;
mod scores;
