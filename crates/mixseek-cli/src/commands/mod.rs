//! One module per command.

pub(crate) mod analyze;
pub(crate) mod arena;
pub(crate) mod config;
pub(crate) mod db;
pub(crate) mod evaluate;
pub(crate) mod exec;
pub(crate) mod exec_output;
pub(crate) mod experiment;
pub(crate) mod experiment_arena;
pub(crate) mod init;
pub(crate) mod llm;
pub(crate) mod member;
pub(crate) mod member_output;
pub(crate) mod prompt;
pub(crate) mod reports;
pub(crate) mod team;
pub(crate) mod ui;
