//! A minimal schema-valid sample for a JSON schema (also Gemini's upper-case dialect):
//! objects get every property, numbers the middle of their range, booleans `false`,
//! strings `"fake <name>"`, arrays one item, enums their first value.

use serde_json::{Map, Value, json};

/// A value valid for `schema` (for the common keywords).
pub(crate) fn sample(schema: &Value) -> Value {
    gen_value(schema, schema, "", 0)
}

fn gen_value(s: &Value, root: &Value, name: &str, depth: u32) -> Value {
    if depth > 20 {
        return Value::Null;
    }
    let Some(o) = s.as_object() else {
        return json!(format!("fake {name}"));
    };
    if let Some(r) = o.get("$ref").and_then(|r| r.as_str()) {
        let target = r.strip_prefix('#').and_then(|p| {
            if p.is_empty() {
                Some(root)
            } else {
                root.pointer(p)
            }
        });
        return target.map_or(Value::Null, |t| gen_value(t, root, name, depth + 1));
    }
    if let Some(c) = o.get("const") {
        return c.clone();
    }
    if let Some(e) = o
        .get("enum")
        .and_then(|e| e.as_array())
        .and_then(|e| e.iter().find(|v| !v.is_null()))
    {
        return e.clone();
    }
    for k in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = o.get(k).and_then(|a| a.as_array()).and_then(|a| {
            a.iter()
                .find(|x| x.get("type").and_then(|t| t.as_str()) != Some("null"))
        }) {
            return gen_value(first, root, name, depth + 1);
        }
    }
    let ty = match o.get("type") {
        Some(Value::String(t)) => t.to_ascii_lowercase(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str())
            .find(|t| *t != "null")
            .unwrap_or("null")
            .to_ascii_lowercase(),
        _ if o.contains_key("properties") => "object".into(),
        _ => "string".into(),
    };
    let num = |k: &str| o.get(k).and_then(|v| v.as_f64());
    match ty.as_str() {
        "object" => {
            let mut out = Map::new();
            if let Some(p) = o.get("properties").and_then(|p| p.as_object()) {
                for (k, v) in p {
                    out.insert(k.clone(), gen_value(v, root, k, depth + 1));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let n = o
                .get("minItems")
                .and_then(|m| m.as_u64())
                .unwrap_or(1)
                .max(1);
            let items = o.get("items").cloned().unwrap_or(json!({}));
            Value::Array(
                (0..n.min(8))
                    .map(|_| gen_value(&items, root, name, depth + 1))
                    .collect(),
            )
        }
        "boolean" => json!(false),
        "integer" | "number" => {
            let lo = num("minimum").or(num("exclusiveMinimum")).unwrap_or(0.0);
            let hi = num("maximum")
                .or(num("exclusiveMaximum"))
                .unwrap_or(if lo > 100.0 { lo + 100.0 } else { 100.0 });
            let mid = (lo + hi) / 2.0;
            if ty == "integer" {
                json!(mid.round() as i64)
            } else {
                json!(mid)
            }
        }
        "null" => Value::Null,
        _ => {
            let mut s = format!("fake {}", if name.is_empty() { "value" } else { name });
            let min = o.get("minLength").and_then(|m| m.as_u64()).unwrap_or(0) as usize;
            while s.len() < min {
                s.push('.');
            }
            json!(s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_follow_simple_schemas() {
        let s = json!({"type": "object", "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 100},
            "ok": {"type": "boolean"},
            "kind": {"$ref": "#/$defs/K"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "n": {"type": ["integer", "null"], "minimum": 1, "maximum": 3}
        }, "$defs": {"K": {"enum": ["a", "b"]}}});
        assert_eq!(
            sample(&s),
            json!({"score": 50.0, "ok": false, "kind": "a", "tags": ["fake tags", "fake tags"], "n": 2})
        );
        assert_eq!(
            sample(&json!({"type": "OBJECT", "properties": {"x": {"type": "STRING"}}})),
            json!({"x": "fake x"})
        );
    }
}
