//! The end-to-end tests: the real `mixseek` binary (`workspace_tests::mixseek_bin`, which
//! refuses a stale one) in sandbox workspaces, against real DuckDB files and the testkit's fake
//! servers. One test executable, since each links DuckDB (see docs/ARCHITECTURE.md, "Test
//! layout"); the real-server tier (`real_server.rs`) is an executable of its own, which
//! `scripts/real-server-tests` runs with `--test real_server`.

mod analyze;
mod arena;
mod browser_client;
mod cache;
mod closed_pipe;
mod config_cli;
mod db;
mod disk_faults;
mod evaluate;
mod exec;
mod exec_scenarios;
mod exit_codes;
mod experiment;
mod grok_responses;
mod llm;
mod member_cmd;
mod members_usage;
mod model_settings;
mod original_configs;
mod otel;
mod privacy;
mod prompt;
mod reliability_doc;
mod reports;
mod servers;
mod team;
mod ui;
mod ui_browser;
mod vertex;
mod workflow;
