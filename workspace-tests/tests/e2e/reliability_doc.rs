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

/// The files and folders of the repository the docs name (`crates/…`, `workspace-tests/…`)
/// exist: a test file moved or renamed takes its mentions along.
#[test]
fn every_repository_path_the_docs_name_exists() {
    let root = workspace_tests::repo_root();
    let mut missing = Vec::new();
    for doc in [
        "README.md",
        "docs/reliability.md",
        "docs/ARCHITECTURE.md",
        "docs/user-guide.md",
        "docs/benchmarks.md",
    ] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
        for span in text.split('`').skip(1).step_by(2) {
            let path = span.split(':').next().unwrap_or(span);
            let is_path = (path.starts_with("crates/") || path.starts_with("workspace-tests/"))
                && path
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/_-.".contains(c));
            if is_path && !root.join(path).exists() {
                missing.push(format!("{doc}: {path}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the docs name paths that do not exist: {missing:?}"
    );
}
