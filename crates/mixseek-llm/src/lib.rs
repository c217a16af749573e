//! mixseek-llm
