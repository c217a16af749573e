//! Identifiers of executions and teams.
//!
//! Both are plain strings on the wire: they serialize and deserialize exactly as a `String`
//! would (`#[serde(transparent)]`), so JSON output, progress files and database columns hold
//! the same bytes as before these types existed. In Rust they keep an execution id from being
//! passed where a team id is expected. Read the text with [`as_str`](ExecutionId::as_str) (or
//! `AsRef<str>` / `Display`); build one with `From<String>` / `From<&str>` or `new`. Both
//! implement `Borrow<str>`, so a `HashMap<TeamId, _>` or `BTreeMap<TeamId, _>` can be looked up
//! with a `&str`.

use serde::{Deserialize, Serialize};

/// Defines a string newtype with the conversions and comparisons both ids share.
macro_rules! string_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            #[doc = concat!("A `", stringify!($name), "` holding `id` as is (no validation).")]
            pub fn new(id: impl Into<String>) -> Self {
                Self(id.into())
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Whether the id is the empty string (an unset id, before validation).
            pub fn is_empty(&self) -> bool {
                self.0.is_empty()
            }

            /// The id as an owned `String`.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        /// Formatted as the string itself (`"alpha"`), so `{:?}` output is what it was when ids
        /// were plain `String`s.
        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&self.0, f)
            }
        }

        /// The id as written; width, fill and precision apply as to a `str` (`{:<12}`).
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_string())
            }
        }

        impl From<&String> for $name {
            fn from(s: &String) -> Self {
                Self(s.clone())
            }
        }

        impl From<&$name> for $name {
            fn from(id: &$name) -> Self {
                id.clone()
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
    };
}

string_id! {
    /// The id of one execution (`mixseek exec` run): a UUID v4 string, as the original.
    /// Ids read back from a store or given on the command line are kept as written.
    ExecutionId
}

impl ExecutionId {
    /// A fresh random (v4) execution id.
    pub fn new_v4() -> Self {
        Self(uuid::Uuid::new_v4().to_string())
    }
}

string_id! {
    /// The id of a team (`[team] team_id`), unique within an execution. Validation (not
    /// blank, unique) belongs to the configuration loader; this type accepts any string.
    /// `Default` is the empty id, the value of an unset `team_id` before validation.
    TeamId
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn execution_ids_are_uuid_v4_and_distinct() {
        let a = ExecutionId::new_v4();
        let b = ExecutionId::new_v4();
        assert_ne!(a, b);
        let parsed = uuid::Uuid::parse_str(a.as_str()).expect("uuid");
        assert_eq!(parsed.get_version_num(), 4);
    }

    #[test]
    fn ids_serialize_as_plain_strings() {
        let t = TeamId::from("alpha");
        assert_eq!(serde_json::to_string(&t).unwrap_or_default(), "\"alpha\"");
        let e: ExecutionId = serde_json::from_str("\"e-1\"").expect("id");
        assert_eq!(e, "e-1");
        assert_eq!(e.to_string(), "e-1");
        let err = serde_json::from_str::<TeamId>("5")
            .err()
            .map(|e| e.to_string());
        let string_err = serde_json::from_str::<String>("5")
            .err()
            .map(|e| e.to_string());
        assert_eq!(err, string_err);
    }

    #[test]
    fn maps_keyed_by_id_are_looked_up_by_str() {
        let mut m = HashMap::new();
        m.insert(TeamId::from("alpha"), 1);
        assert_eq!(m.get("alpha"), Some(&1));
        let alpha = TeamId::from("alpha");
        assert!("alpha" == alpha);
        assert_eq!(alpha, "alpha");
        assert_eq!(String::from(TeamId::new("b")), "b");
        assert_eq!(format!("[{:<4}]", TeamId::from("ab")), "[ab  ]");
        assert_eq!(format!("{:?}", TeamId::from("ab")), "\"ab\"");
    }
}
