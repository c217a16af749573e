//! mixseek-config
