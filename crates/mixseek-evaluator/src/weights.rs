//! The original's weight rules, in its order and with its messages: at least one metric;
//! every weight set or none (none ⇒ equal weights `1/n`); the sum within `1.0 ± 0.001`;
//! unique names. Weights are used as given (never normalised here).

/// Checks the metrics' weights and returns the weight of each, in order. The rule lives in
/// `mixseek_config::resolve_weights` so config validation (`config validate`,
/// `exec --dry-run`) runs exactly the same check.
///
/// `names` are the configured names (used in the messages); `reported` are the names the
/// metrics report (canonical built-in names), which must be unique.
pub(crate) fn resolve_weights(
    names: &[String],
    weights: &[Option<f64>],
    reported: &[String],
) -> Result<Vec<f64>, String> {
    mixseek_config::resolve_weights(names, weights, reported)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(spec: &[(&str, Option<f64>)]) -> Result<Vec<f64>, String> {
        let names: Vec<String> = spec.iter().map(|(n, _)| n.to_string()).collect();
        let weights: Vec<Option<f64>> = spec.iter().map(|(_, w)| *w).collect();
        resolve_weights(&names, &weights, &names)
    }

    #[test]
    fn no_metric_is_an_error() {
        assert_eq!(
            check(&[]),
            Err("List should have at least 1 item after validation, not 0".into())
        );
    }

    #[test]
    fn all_unset_gives_equal_weights() {
        assert_eq!(
            check(&[("a", None), ("b", None), ("c", None)]),
            Ok(vec![0.3333333333333333; 3])
        );
        assert_eq!(check(&[("a", None)]), Ok(vec![1.0]));
    }

    #[test]
    fn a_mix_of_set_and_unset_is_rejected_with_the_original_message() {
        assert_eq!(
            check(&[("metric1", Some(0.5)), ("metric2", None)]),
            Err("すべてのメトリクスの重みを指定するか、すべて未指定にしてください。重みが未指定: metric2。重みが設定済み: metric1。".into())
        );
        assert_eq!(
            check(&[("a", None), ("b", Some(0.5)), ("c", None), ("d", Some(0.5))]),
            Err("すべてのメトリクスの重みを指定するか、すべて未指定にしてください。重みが未指定: a, c。重みが設定済み: b, d。".into())
        );
    }

    #[test]
    fn the_sum_must_be_one_within_a_thousandth() {
        assert_eq!(
            check(&[("a", Some(0.5)), ("b", Some(0.5)), ("c", Some(0.3))]),
            Err("Metric weights must sum to 1.0, got: 1.3000. Current weights: a=0.5, b=0.5, c=0.3. Please adjust the weights in your configuration file.".into())
        );
        assert_eq!(
            check(&[("a", Some(0.5)), ("b", Some(0.3))]),
            Err("Metric weights must sum to 1.0, got: 0.8000. Current weights: a=0.5, b=0.3. Please adjust the weights in your configuration file.".into())
        );
        assert!(check(&[("a", Some(0.4995)), ("b", Some(0.5))]).is_ok());
        assert!(check(&[("a", Some(0.5005)), ("b", Some(0.5))]).is_ok());
        assert_eq!(
            check(&[("a", Some(0.334)), ("b", Some(0.333)), ("c", Some(0.333))]),
            Ok(vec![0.334, 0.333, 0.333])
        );
        // Weights print as Python floats: `1.0`, `1e-05`.
        assert_eq!(
            check(&[("a", Some(1.0)), ("b", Some(0.01))]),
            Err("Metric weights must sum to 1.0, got: 1.0100. Current weights: a=1.0, b=0.01. Please adjust the weights in your configuration file.".into())
        );
        assert_eq!(
            check(&[("a", Some(0.9)), ("b", Some(0.00001))]),
            Err("Metric weights must sum to 1.0, got: 0.9000. Current weights: a=0.9, b=1e-05. Please adjust the weights in your configuration file.".into())
        );
    }

    #[test]
    fn duplicate_names_are_rejected_after_the_weight_checks() {
        assert_eq!(
            check(&[("Coverage", Some(0.5)), ("Coverage", Some(0.5))]),
            Err(
                "Duplicate metric names found: Coverage. Each metric must have a unique name."
                    .into()
            )
        );
        // The sum is checked first.
        assert!(
            check(&[("x", Some(0.5)), ("x", Some(0.6))])
                .unwrap_err()
                .starts_with("Metric weights must sum")
        );
    }
}
