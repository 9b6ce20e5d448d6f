//! Who a local server (`serve`, `studio`) answers and how much work it
//! takes on at once: the `Host` names it accepts (DNS rebinding), its
//! token (compared in constant time) and [`Slots`], a bounded queue of
//! syntheses whose overflow is answered 503.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::{HeaderMap, Uri, header};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Host names a loopback server answers to.
pub const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// The `Host` names a server accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    /// Names accepted (without port), compared without case.
    pub names: Vec<String>,
    /// Also any IP address written out (`192.168.1.5`, `[fe80::1]`): a
    /// client that reaches a non-loopback server by its address. A page of
    /// another site cannot make its own name one of these.
    pub addresses: bool,
}

impl HostRule {
    /// The loopback names only (a server on a loopback address).
    pub fn loopback() -> HostRule {
        HostRule {
            names: LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect(),
            addresses: false,
        }
    }

    /// Any address, the loopback names and `names` (a server on another
    /// address).
    pub fn network(names: &[String]) -> HostRule {
        let mut rule = HostRule::loopback();
        rule.names.extend(names.iter().cloned());
        rule.addresses = true;
        rule
    }

    /// Whether `host` (a `Host` header, port included or not) is accepted.
    pub fn accepts(&self, host: &str) -> bool {
        let name = host_only(host);
        if self.names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            return true;
        }
        self.addresses && {
            let bare = name
                .strip_prefix('[')
                .and_then(|n| n.strip_suffix(']'))
                .unwrap_or(name);
            bare.parse::<IpAddr>().is_ok()
        }
    }
}

/// The address to print for a server listening on `addr`: `addr` itself,
/// except that an unspecified address (0.0.0.0, ::) is shown as the
/// address this machine reaches other hosts from (what a phone on the same
/// network would type), or 127.0.0.1 when it has none. Nothing is sent: a
/// UDP socket is only connected, which picks the route.
pub fn reachable_addr(addr: std::net::SocketAddr) -> std::net::SocketAddr {
    if !addr.ip().is_unspecified() {
        return addr;
    }
    let outbound = std::net::UdpSocket::bind((std::net::Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|socket| {
            // A documentation address (TEST-NET-1): never answered.
            socket.connect((std::net::Ipv4Addr::new(192, 0, 2, 1), 9))?;
            socket.local_addr()
        })
        .map(|local| local.ip())
        .ok()
        .filter(|ip| !ip.is_unspecified());
    let ip = outbound.unwrap_or(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
    std::net::SocketAddr::new(ip, addr.port())
}

/// The `Host` header ("" when absent or not text).
pub fn host_name(headers: &HeaderMap) -> String {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// `host:port` → `host` (IPv6 in brackets kept whole).
pub fn host_only(host: &str) -> &str {
    match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => &host[..i],
        _ => host,
    }
}

/// `host:port` → `port` ("80" without one).
pub fn host_port(host: &str) -> &str {
    match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => &host[i + 1..],
        _ => "80",
    }
}

/// Compares in time that depends only on the lengths.
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `headers` carry `Authorization: Bearer TOKEN`.
pub fn bearer_is(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .is_some_and(|given| same_bytes(given.trim().as_bytes(), token.as_bytes()))
}

/// Whether header `name` is `token`.
pub fn header_is(headers: &HeaderMap, name: &str, token: &str) -> bool {
    headers
        .get(name)
        .is_some_and(|given| same_bytes(given.as_bytes(), token.as_bytes()))
}

/// Whether the query of `uri` has `token=TOKEN`.
pub fn query_token_is(uri: &Uri, token: &str) -> bool {
    uri.query().is_some_and(|q| {
        form_urlencoded::parse(q.as_bytes())
            .any(|(k, v)| k == "token" && same_bytes(v.as_bytes(), token.as_bytes()))
    })
}

/// Whether a `Cookie` header has `name=TOKEN`.
pub fn cookie_is(headers: &HeaderMap, name: &str, token: &str) -> bool {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .flat_map(|h| h.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .any(|(k, v)| k == name && same_bytes(v.as_bytes(), token.as_bytes()))
}

/// Work slots: `running` at once, `waiting` more in a queue, the rest
/// refused (answer 503 with `Retry-After`).
pub struct Slots {
    permits: Arc<Semaphore>,
    queued: AtomicUsize,
    waiting: usize,
}

impl Slots {
    pub fn new(running: usize, waiting: usize) -> Slots {
        Slots {
            permits: Arc::new(Semaphore::new(running.max(1))),
            queued: AtomicUsize::new(0),
            waiting,
        }
    }

    /// A slot: at once when one is free, after a wait when the queue has
    /// room, else `None`. The slot is free again when the permit drops.
    pub async fn take(&self) -> Option<OwnedSemaphorePermit> {
        if let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() {
            return Some(permit);
        }
        let waiting = self.queued.fetch_add(1, Ordering::SeqCst);
        let permit = if waiting < self.waiting {
            Arc::clone(&self.permits).acquire_owned().await.ok()
        } else {
            None
        };
        self.queued.fetch_sub(1, Ordering::SeqCst);
        permit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_lose_their_port() {
        assert_eq!(host_only("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host_only("[::1]:80"), "[::1]");
        assert_eq!(host_only("[::1]"), "[::1]");
        assert_eq!(host_only("localhost"), "localhost");
        assert_eq!(host_port("127.0.0.1:8080"), "8080");
        assert_eq!(host_port("[::1]"), "80");
    }

    #[test]
    fn host_rules() {
        let loopback = HostRule::loopback();
        assert!(loopback.accepts("127.0.0.1:5"));
        assert!(loopback.accepts("LOCALHOST"));
        assert!(!loopback.accepts("192.168.1.5:80"));
        assert!(!loopback.accepts("evil.example"));
        let network = HostRule::network(&["studio.lan".to_owned()]);
        assert!(network.accepts("192.168.1.5:8080"));
        assert!(network.accepts("[fe80::1]:8080"));
        assert!(network.accepts("studio.lan:8080"));
        assert!(network.accepts("localhost"));
        assert!(!network.accepts("evil.example:8080"));
        assert!(!network.accepts("192.168.1.5.evil.example"));
        assert!(!network.accepts(""));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_bytes(b"abc", b"abc"));
        assert!(!same_bytes(b"abc", b"abd"));
        assert!(!same_bytes(b"ab", b"abc"));
        assert!(!same_bytes(b"", b"abc"));
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, "a=1; t=secret; b=2".parse().unwrap());
        assert!(cookie_is(&headers, "t", "secret"));
        assert!(!cookie_is(&headers, "t", "secre"));
        assert!(!cookie_is(&headers, "a", "secret"));
        let uri: Uri = "/?x=1&token=s%20t".parse().unwrap();
        assert!(query_token_is(&uri, "s t"));
        assert!(!query_token_is(&uri, "s"));
    }

    #[tokio::test]
    async fn slots_queue_then_refuse() {
        let slots = Arc::new(Slots::new(1, 1));
        let first = slots.take().await.unwrap();
        let waiter = {
            let slots = Arc::clone(&slots);
            tokio::spawn(async move { slots.take().await.is_some() })
        };
        // Let the waiter queue up; the next one finds the queue full.
        while slots.queued.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        assert!(slots.take().await.is_none());
        drop(first);
        assert!(waiter.await.unwrap());
    }
}
