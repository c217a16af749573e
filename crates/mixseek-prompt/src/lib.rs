//! mixseek-prompt
