//! The round controller's integration tests, one test executable (see docs/ARCHITECTURE.md,
//! "Test layout").

mod common;
mod controller;
mod standalone;
