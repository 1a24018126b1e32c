//! How the learning commands write hosts, digests and times.

use super::manifest::Host;

/// `h0:2 h1:2 …`, at most six hosts named.
pub fn hosts_text(hosts: &[Host]) -> String {
    let mut parts: Vec<String> = hosts
        .iter()
        .take(6)
        .map(|h| format!("{}:{}", h.name, h.slots))
        .collect();
    if hosts.len() > 6 {
        parts.push(format!("… {} hosts", hosts.len()));
    }
    parts.join(" ")
}

/// The first 12 hex digits of a digest.
pub fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

/// Seconds as a person reads them.
pub fn secs(s: f64) -> String {
    match s {
        s if s >= 1.0 => format!("{s:.2} s"),
        s if s >= 1e-3 => format!("{:.2} ms", s * 1e3),
        s => format!("{:.1} µs", s * 1e6),
    }
}
