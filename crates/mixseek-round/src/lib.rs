//! mixseek-round
