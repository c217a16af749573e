//! mixseek-orchestrator
