//! The original's metric-weight rules, in its order and with its messages: at least one
//! metric; every weight set or none (none ⇒ equal weights `1/n`); the sum within
//! `1.0 ± 0.001`; unique names. Weights are used as given (never normalised here).
//!
//! Config validation (`EvaluatorSettings::validate`, hence `config validate` and
//! `exec --dry-run`) and the evaluator's plan both call [`resolve_weights`], so a
//! configuration that passes preflight cannot fail on its weights at run time.

/// Checks the metrics' weights and returns the weight of each, in order.
///
/// `names` are the configured names (used in the messages); `reported` are the names the
/// metrics report (canonical built-in names), which must be unique.
pub fn resolve_weights(
    names: &[String],
    weights: &[Option<f64>],
    reported: &[String],
) -> Result<Vec<f64>, String> {
    if names.is_empty() {
        return Err("List should have at least 1 item after validation, not 0".to_string());
    }
    let unset: Vec<&str> = names
        .iter()
        .zip(weights)
        .filter(|(_, w)| w.is_none())
        .map(|(n, _)| n.as_str())
        .collect();
    let set: Vec<&str> = names
        .iter()
        .zip(weights)
        .filter(|(_, w)| w.is_some())
        .map(|(n, _)| n.as_str())
        .collect();
    let resolved: Vec<f64> = if set.is_empty() {
        let equal = 1.0 / names.len() as f64;
        vec![equal; names.len()]
    } else if !unset.is_empty() {
        return Err(format!(
            "すべてのメトリクスの重みを指定するか、すべて未指定にしてください。重みが未指定: {}。重みが設定済み: {}。",
            unset.join(", "),
            set.join(", ")
        ));
    } else {
        weights.iter().map(|w| w.unwrap_or(0.0)).collect()
    };
    let total: f64 = resolved.iter().sum();
    if !(0.999..=1.001).contains(&total) {
        let current: Vec<String> = names
            .iter()
            .zip(&resolved)
            .map(|(n, w)| format!("{n}={}", py_float_repr(*w)))
            .collect();
        return Err(format!(
            "Metric weights must sum to 1.0, got: {total:.4}. Current weights: {}. Please adjust the weights in your configuration file.",
            current.join(", ")
        ));
    }
    let mut duplicates: Vec<&str> = Vec::new();
    for (i, n) in reported.iter().enumerate() {
        if reported[..i].contains(n) && !duplicates.contains(&n.as_str()) {
            duplicates.push(n);
        }
    }
    if !duplicates.is_empty() {
        return Err(format!(
            "Duplicate metric names found: {}. Each metric must have a unique name.",
            duplicates.join(", ")
        ));
    }
    Ok(resolved)
}

/// Python's `repr(float)`: shortest round-trip digits, `.0` on integral values, exponent form
/// (`1e-05`, `1e+16`) outside `[1e-4, 1e16)`; `nan`, `inf`, `-inf`.
pub(crate) fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // Rust's Debug form has the same digits and the same switch to exponent form; only the
    // exponent is written differently (`1e-5` vs `1e-05`).
    let s = format!("{x:?}");
    match s.split_once('e') {
        None => s,
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp.trim_start_matches('+')),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
    }
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
    fn python_float_repr() {
        for (x, s) in [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (0.00001, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1.5e300, "1.5e+300"),
            (-2.5e-7, "-2.5e-07"),
            (0.0, "0.0"),
        ] {
            assert_eq!(py_float_repr(x), s, "{x}");
        }
    }

    #[test]
    fn the_rules_in_order() {
        assert!(check(&[]).is_err());
        assert_eq!(check(&[("a", None), ("b", None)]), Ok(vec![0.5, 0.5]));
        assert!(
            check(&[("a", Some(0.5)), ("b", None)])
                .unwrap_err()
                .starts_with("すべてのメトリクスの重みを指定するか")
        );
        assert_eq!(
            check(&[("a", Some(0.5)), ("b", Some(0.3))]),
            Err("Metric weights must sum to 1.0, got: 0.8000. Current weights: a=0.5, b=0.3. Please adjust the weights in your configuration file.".into())
        );
        assert!(
            check(&[("a", Some(0.5)), ("a", Some(0.5))])
                .unwrap_err()
                .starts_with("Duplicate metric names found: a.")
        );
    }
}
