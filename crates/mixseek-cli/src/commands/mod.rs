//! One module per command.

pub mod config;
pub mod evaluate;
pub mod exec;
pub mod exec_output;
pub mod init;
pub mod llm;
pub mod prompt;
pub mod reports;
pub mod team;
