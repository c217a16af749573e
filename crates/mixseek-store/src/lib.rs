//! mixseek-store
