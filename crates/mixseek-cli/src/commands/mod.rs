//! One module per command.

pub mod config;
pub mod exec;
pub mod exec_output;
pub mod init;
pub mod reports;
pub mod team;
