//! A redaction corpus: secrets and personal values of 20 kinds (emails,
//! Luhn-valid cards, JWTs, cloud and VCS tokens, private keys, passwords in
//! URLs, IBANs, phone numbers, ...) with a realistic line to plant each in.
//! Generated deterministically, so every run and every crate that checks
//! "no planted value is stored" sees the same 117 values.

/// Deterministic generator (xorshift) so the corpus is the same every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize] as char)
            .collect()
    }
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_NUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const DIGITS: &[u8] = b"0123456789";

fn luhn_complete(prefix: &str) -> String {
    // Append the check digit that makes `prefix + d` Luhn-valid.
    for d in 0..10 {
        let candidate = format!("{prefix}{d}");
        let sum: u32 = candidate
            .chars()
            .rev()
            .enumerate()
            .map(|(i, c)| {
                let v = c.to_digit(10).unwrap();
                if i % 2 == 1 {
                    if v * 2 > 9 { v * 2 - 9 } else { v * 2 }
                } else {
                    v
                }
            })
            .sum();
        if sum.is_multiple_of(10) {
            return candidate;
        }
    }
    unreachable!()
}

fn iban(country: &str, bban: &str) -> String {
    let rearranged = format!("{bban}{country}00");
    let mut rem: u64 = 0;
    for c in rearranged.chars() {
        let v = c.to_digit(36).unwrap() as u64;
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    format!("{country}{:02}{bban}", 98 - rem)
}

/// (kind, value, context line with `{}` where the value goes).
pub fn planted() -> Vec<(&'static str, String, &'static str)> {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let mut v: Vec<(&'static str, String, &'static str)> = Vec::new();
    let names = [
        "alice.nguyen",
        "bob",
        "c.okafor",
        "dmitri.petrov+ci",
        "eva_lindqvist",
        "f.oliveira",
    ];
    let domains = [
        "example.com",
        "corp.acme.io",
        "mail.example.org",
        "gmail.com",
        "uni-heidelberg.de",
        "example.co.uk",
    ];
    for i in 0..6 {
        let ctx = [
            "user {} not found",
            "sending receipt to {}",
            "{\"level\":\"error\",\"msg\":\"bounce\",\"to\":\"{}\"}",
            "KeyError: '{}'",
            "From: {}",
            "invite failed for <{}>",
        ][i];
        v.push(("email", format!("{}@{}", names[i], domains[i]), ctx));
    }
    for (i, prefix) in ["4539", "5425", "3714", "6011", "4000", "2221"]
        .iter()
        .enumerate()
    {
        let len = if prefix.starts_with("37") { 14 } else { 15 };
        let raw = luhn_complete(&format!("{prefix}{}", r.pick(DIGITS, len - prefix.len())));
        let shown = if i % 2 == 0 {
            raw.clone()
        } else {
            raw.as_bytes()
                .chunks(4)
                .map(|c| std::str::from_utf8(c).unwrap())
                .collect::<Vec<_>>()
                .join(" ")
        };
        v.push((
            "card",
            shown,
            [
                "charge declined for card {}",
                "card={} cvv=***",
                "PaymentError: card {} expired",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let jwt = format!(
            "eyJ{}.eyJ{}.{}",
            r.pick(B64URL, 20),
            r.pick(B64URL, 40),
            r.pick(B64URL, 43)
        );
        v.push((
            "jwt",
            jwt,
            [
                "session={}",
                "invalid token {} (expired)",
                "\"id_token\": \"{}\"",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        v.push((
            "aws_access_key",
            format!("AKIA{}", r.pick(UPPER_NUM, 16)),
            [
                "using credentials {} for s3",
                "InvalidAccessKeyId: The AWS Access Key Id {} does not exist",
                "export AWS_ACCESS_KEY_ID={}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        v.push((
            "aws_secret_key",
            r.pick(B64, 40),
            [
                "aws_secret_access_key = {}",
                "AWS_SECRET_ACCESS_KEY={}",
                "\"aws_secret_access_key\": \"{}\"",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let t = match i % 3 {
            0 => format!("ghp_{}", r.pick(ALNUM, 36)),
            1 => format!("gho_{}", r.pick(ALNUM, 36)),
            _ => format!("github_pat_{}_{}", r.pick(ALNUM, 22), r.pick(ALNUM, 59)),
        };
        v.push((
            "github_token",
            t,
            [
                "remote: Invalid username or token {}",
                "git clone https://x-access-token:{}@github.com/acme/api.git",
                "GITHUB_TOKEN={}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        v.push((
            "gitlab_token",
            format!("glpat-{}", r.pick(B64URL, 20)),
            [
                "PRIVATE-TOKEN: {}",
                "curl --header 'PRIVATE-TOKEN: {}' https://gitlab.example.com/api/v4/projects",
                "CI_JOB_TOKEN fallback {}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let kind = ["xoxb", "xoxp", "xoxa"][i % 3];
        v.push((
            "slack_token",
            format!(
                "{kind}-{}-{}-{}",
                r.pick(DIGITS, 12),
                r.pick(DIGITS, 13),
                r.pick(ALNUM, 24)
            ),
            [
                "slack notify failed token={}",
                "SLACK_BOT_TOKEN: {}",
                "posting with {}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let k = if i % 2 == 0 { "sk_live_" } else { "rk_live_" };
        v.push((
            "stripe_key",
            format!("{k}{}", r.pick(ALNUM, 24)),
            [
                "stripe.api_key = '{}'",
                "Invalid API Key provided: {}",
                "STRIPE_SECRET={}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        v.push((
            "google_api_key",
            format!("AIza{}", r.pick(B64URL, 35)),
            [
                "https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={}",
                "GOOGLE_API_KEY={}",
                "firebase init with apiKey \"{}\"",
            ][i % 3],
        ));
    }
    for _ in 0..3 {
        let body: Vec<String> = (0..4).map(|_| r.pick(B64, 64)).collect();
        v.push((
            "private_key",
            format!(
                "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
                body.join("\n")
            ),
            "loaded key:\n{}\n",
        ));
    }
    for i in 0..6 {
        let pw = format!("{}{}!", r.pick(ALNUM, 10), r.pick(DIGITS, 2));
        v.push((
            "url_password",
            pw,
            [
                "connecting to postgres://app:{}@db.internal:5432/shop",
                "redis://default:{}@cache:6379/0",
                "amqp://guest:{}@rabbit.example.com/",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        v.push((
            "bearer",
            r.pick(B64URL, 32),
            [
                "Authorization: Bearer {}",
                "sending request with bearer {}",
                "401 Unauthorized for token {}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let pw = [
            "hunter2",
            "Winter2024!",
            "correct-horse-battery",
            "P@ssw0rd",
            "s3cr3t",
            "letmein99",
        ][i];
        v.push((
            "password",
            pw.to_owned(),
            [
                "login failed: password={} for admin",
                "DB_PASSWORD={}",
                "{\"password\": \"{}\", \"user\": \"x\"}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let ip = format!(
            "{}.{}.{}.{}",
            10 + r.next() % 200,
            r.next() % 256,
            r.next() % 256,
            1 + r.next() % 254
        );
        v.push((
            "ipv4",
            ip,
            [
                "connection from {} refused",
                "X-Forwarded-For: {}",
                "dial tcp {}:443: i/o timeout",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let p = [
            "+49 30 901820",
            "+1 415-555-0132",
            "(212) 555-0187",
            "+44 20 7946 0958",
            "+33 1 42 68 53 00",
            "646-555-0199",
        ][i];
        v.push((
            "phone",
            p.to_owned(),
            [
                "sms to {} failed",
                "customer phone: {}",
                "callback number {} invalid",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let (c, b) = [
            ("DE", "370400440532013000"),
            ("GB", "WEST12345698765432"),
            ("FR", "20041010050500013M02606"),
            ("NL", "ABNA0417164300"),
            ("ES", "21000418450200051332"),
            ("IT", "X0542811101000000123456"),
        ][i];
        let val = iban(c, b);
        v.push((
            "iban",
            val,
            [
                "SEPA transfer to {} rejected",
                "iban={}",
                "payout account {} closed",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let t = format!(
            "{}{}{}",
            r.pick(ALNUM, 14),
            r.pick(DIGITS, 3),
            r.pick(ALNUM, 15)
        );
        v.push((
            "high_entropy",
            t,
            ["x-session {}", "upload signature {} mismatch", "nonce={}"][i % 3],
        ));
    }
    for i in 0..6 {
        let u = [
            "maria",
            "jdoe",
            "kwame.mensah",
            "li.wei",
            "s.kowalski",
            "tanaka",
        ][i];
        v.push((
            "username",
            u.to_owned(),
            [
                "open /home/{}/.config/app.toml: permission denied",
                "File \"/Users/{}/src/app/main.py\", line 3",
                "C:\\Users\\{}\\AppData\\Local\\app.log",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        v.push((
            "cookie",
            format!("sid={}; csrftoken={}", r.pick(ALNUM, 24), r.pick(ALNUM, 32)),
            ["Cookie: {}", "Set-Cookie: {}", "> cookie: {}"][i % 3],
        ));
    }
    v
}

/// The values that matter in a planted context (a cookie header's pieces).
pub fn secrets_of(kind: &str, value: &str) -> Vec<String> {
    match kind {
        "cookie" => value
            .split("; ")
            .map(|kv| kv.split_once('=').unwrap().1.to_owned())
            .collect(),
        "card" => vec![value.to_owned(), value.replace(' ', "")],
        _ => vec![value.to_owned()],
    }
}
