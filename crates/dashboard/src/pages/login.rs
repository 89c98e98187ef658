//! The sign-in form.

use super::{Chrome, page};
use maud::{Markup, html};

/// The token form. `nonce` is also in the browser's sign-in cookie;
/// `next` is where to go after signing in (already checked to be local).
pub(crate) fn login(nonce: &str, next: &str, problem: Option<&str>) -> Markup {
    let chrome = Chrome {
        viewer: None,
        csrf: None,
        refresh: None,
    };
    page(
        "Sign in",
        &chrome,
        html! {
            section.login {
                h1 { "Sign in" }
                @if let Some(problem) = problem {
                    p.error role="alert" { (problem) }
                }
                form.login method="post" action="/login" {
                    input type="hidden" name="csrf" value=(nonce);
                    input type="hidden" name="next" value=(next);
                    label for="token" { "Access token" }
                    input #token type="password" name="token" autocomplete="current-password" required autofocus;
                    button type="submit" { "Sign in" }
                }
                p.muted {
                    "Use the token your TraceLab operator gave you. It is checked once; "
                    "the browser then keeps only a session cookie."
                }
            }
        },
    )
}
