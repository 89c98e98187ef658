//! What each language's error says was read from nothing: the member and,
//! when the runtime names it, the object. These read the failing output
//! (text the runtime wrote), not code; the guards find the accesses on the
//! tree.

use tracelab_domain::Language;

/// A member the error names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Member {
    /// Java's `Cannot invoke "T.name()"`.
    Method(String),
    /// Java's `Cannot read field "name"`.
    Field(String),
    /// A property or attribute (Python, JavaScript).
    Any(String),
}

impl Member {
    pub fn name(&self) -> &str {
        match self {
            Member::Method(n) | Member::Field(n) | Member::Any(n) => n,
        }
    }
}

/// One access the error says failed: the member, and the object's source
/// text when the runtime names it (Java's `because "user" is null`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub member: Member,
    pub object: Option<String>,
}

/// The accesses `failure` names in `language`'s words (none for Go, whose
/// nil dereference names no member, and Rust, which has no null).
pub fn accesses(language: Language, failure: &str) -> Vec<Access> {
    let mut out: Vec<Access> = Vec::new();
    let members: Vec<Access> = match language {
        Language::Python => any(none_attributes(failure)),
        Language::Javascript | Language::Typescript => any(javascript_properties(failure)),
        Language::Java => java_accesses(failure),
        _ => Vec::new(),
    };
    for access in members {
        if !out.contains(&access) {
            out.push(access);
        }
    }
    out
}

fn any(names: Vec<String>) -> Vec<Access> {
    names
        .into_iter()
        .map(|n| Access {
            member: Member::Any(n),
            object: None,
        })
        .collect()
}

/// The attribute names the failure says were read from None
/// (`'NoneType' object has no attribute 'name'`).
pub fn none_attributes(failure: &str) -> Vec<String> {
    quoted_after(failure, "'NoneType' object has no attribute '", '\'')
}

/// The properties a JavaScript `TypeError` says were read from `undefined`
/// or `null`, in the words of V8 (Node.js, Chrome) old and new and of
/// SpiderMonkey (Firefox).
fn javascript_properties(failure: &str) -> Vec<String> {
    let mut names = Vec::new();
    for nothing in ["undefined", "null"] {
        for mark in [
            format!("Cannot read properties of {nothing} (reading '"),
            format!("Cannot set properties of {nothing} (setting '"),
        ] {
            names.extend(quoted_after(failure, &mark, '\''));
        }
    }
    names.extend(quoted_after(failure, "Cannot read property '", '\''));
    names.extend(quoted_after(failure, "Cannot set property '", '\''));
    names.extend(quoted_after(failure, "can't access property \"", '"'));
    names
}

/// Java's helpful NullPointerException messages (JEP 358):
/// `Cannot invoke "String.trim()" because "name" is null`,
/// `Cannot read field "x" because "<local1>" is null`,
/// `Cannot read the array length because "xs" is null`. A `<localN>` or
/// `<parameterN>` (code compiled without names) or a return value names no
/// object.
fn java_accesses(failure: &str) -> Vec<Access> {
    let mut out = Vec::new();
    for line in failure.lines() {
        let Some(at) = line.find("Cannot ") else {
            continue;
        };
        let message = &line[at..];
        let member = if let Some(invoked) = quoted_after(message, "Cannot invoke \"", '"').first() {
            let call = invoked.split('(').next().unwrap_or_default();
            Member::Method(call.rsplit('.').next().unwrap_or_default().to_string())
        } else if let Some(field) = quoted_after(message, "Cannot read field \"", '"')
            .into_iter()
            .chain(quoted_after(message, "Cannot assign field \"", '"'))
            .next()
        {
            Member::Field(field)
        } else if message.starts_with("Cannot read the array length") {
            Member::Field("length".into())
        } else {
            continue;
        };
        if member.name().is_empty() {
            continue;
        }
        let object = quoted_after(message, "because \"", '"')
            .into_iter()
            .next()
            .filter(|o| !o.starts_with('<'));
        out.push(Access { member, object });
    }
    out
}

/// Whether a Go panic is a nil pointer dereference (its frames name the
/// line; the message names no field).
pub fn go_nil_dereference(failure: &str) -> bool {
    failure.contains("invalid memory address or nil pointer dereference")
}

/// Each distinct text between `mark` and the next `end`, in order.
fn quoted_after(text: &str, mark: &str, end: char) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (i, _) in text.match_indices(mark) {
        let rest = &text[i + mark.len()..];
        if let Some(stop) = rest.find(end) {
            let name = &rest[..stop];
            if !name.is_empty() && !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method(name: &str, object: Option<&str>) -> Access {
        Access {
            member: Member::Method(name.into()),
            object: object.map(str::to_string),
        }
    }

    #[test]
    fn javascript_errors_old_and_new_and_firefox() {
        let node = "TypeError: Cannot read properties of undefined (reading 'name')\n    at nameOf (/app/src/users.js:3:25)";
        assert_eq!(javascript_properties(node), ["name"]);
        assert_eq!(
            javascript_properties("TypeError: Cannot read properties of null (reading 'length')"),
            ["length"]
        );
        assert_eq!(
            javascript_properties("TypeError: Cannot read property 'id' of undefined"),
            ["id"]
        );
        assert_eq!(
            javascript_properties("TypeError: can't access property \"x\", p is undefined"),
            ["x"]
        );
        assert!(javascript_properties("ReferenceError: x is not defined").is_empty());
    }

    #[test]
    fn java_helpful_messages_name_the_member_and_the_object() {
        let trace = "java.lang.NullPointerException: Cannot invoke \"String.trim()\" because \"name\" is null\n\tat Users.clean(Users.java:7)";
        assert_eq!(java_accesses(trace), [method("trim", Some("name"))]);
        assert_eq!(
            java_accesses(
                "Exception: Cannot invoke \"java.util.List.size()\" because \"<local2>\" is null"
            ),
            [method("size", None)]
        );
        assert_eq!(
            java_accesses("NPE: Cannot read field \"x\" because \"this.origin\" is null"),
            [Access {
                member: Member::Field("x".into()),
                object: Some("this.origin".into())
            }]
        );
        assert_eq!(
            java_accesses("Cannot invoke \"A.b()\" because the return value of \"A.c()\" is null"),
            [method("b", None)]
        );
        assert_eq!(
            java_accesses("NPE: Cannot read the array length because \"xs\" is null")[0].member,
            Member::Field("length".into())
        );
        assert!(java_accesses("java.lang.NullPointerException\n\tat A.f(A.java:3)").is_empty());
    }

    #[test]
    fn go_and_rust_name_no_member() {
        let panic = "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a1b2c]\n\ngoroutine 7 [running]:\nexample.com/m.(*Store).Get(...)\n\t/src/m/store.go:12 +0x1c";
        assert!(go_nil_dereference(panic));
        assert!(accesses(Language::Go, panic).is_empty());
        let rust = "thread 'main' panicked at src/lib.rs:4:9:\ncalled `Option::unwrap()` on a `None` value";
        assert!(accesses(Language::Rust, rust).is_empty());
        assert!(!go_nil_dereference(rust));
    }
}
