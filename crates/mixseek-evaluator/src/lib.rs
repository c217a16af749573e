//! mixseek-evaluator
