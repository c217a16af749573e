//! mixseek-testkit
