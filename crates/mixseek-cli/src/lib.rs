//! mixseek-cli
