//! docs/reliability.md backs every row with a named test: each test it names exists.

use std::path::Path;

fn sources(dir: &Path, out: &mut String) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            if !p.ends_with("target") && !p.ends_with("snapshots") {
                sources(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
        }
    }
}

#[test]
fn every_test_the_reliability_table_names_exists() {
    let root = workspace_tests::repo_root();
    let doc =
        std::fs::read_to_string(root.join("docs/reliability.md")).expect("docs/reliability.md");
    let mut code = String::new();
    sources(&root.join("crates"), &mut code);
    sources(&root.join("workspace-tests"), &mut code);
    let named: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            s.matches('_').count() >= 4
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .collect();
    assert!(named.len() >= 30, "the table names its tests: {named:?}");
    let missing: Vec<&&str> = named
        .iter()
        .filter(|n| !code.contains(&format!("fn {n}(")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/reliability.md names tests that do not exist: {missing:?}"
    );
}
