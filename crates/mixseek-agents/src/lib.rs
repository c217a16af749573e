//! mixseek-agents
