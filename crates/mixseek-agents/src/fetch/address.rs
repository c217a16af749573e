//! Which IP addresses a `web_fetch` member may connect to: public unicast only, unless the
//! member sets `allow_private_network = true`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not public, or `None` when it is.
pub(crate) fn non_public_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() || o[0] == 0 {
        Some("an unspecified address")
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if o[0] == 100 && (64..128).contains(&o[1]) {
        Some("a shared (carrier-grade NAT) address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if ip.is_broadcast() || o[0] >= 240 {
        Some("a reserved address")
    } else if (o[0], o[1], o[2]) == (192, 0, 0) || (o[0] == 198 && (o[1] == 18 || o[1] == 19)) {
        Some("a special-purpose address")
    } else if ip.is_documentation() {
        Some("a documentation address")
    } else {
        None
    }
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_reason(v4);
    }
    let s = ip.segments();
    // NAT64 (64:ff9b::/96) embeds an IPv4 address.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|x| *x == 0) {
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return v4_reason(v4);
    }
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if (s[0] & 0xfe00) == 0xfc00 {
        Some("a private (unique local) address")
    } else if (s[0] & 0xffc0) == 0xfe80 {
        Some("a link-local address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if s[0] == 0 && s[1..6].iter().all(|x| *x == 0) {
        // Deprecated IPv4-compatible addresses (::a.b.c.d).
        Some("a reserved address")
    } else if s[0] == 0x2001 && s[1] == 0x0db8 {
        Some("a documentation address")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(s: &str) -> Option<&'static str> {
        non_public_reason(s.parse().expect("ip"))
    }

    #[test]
    fn private_and_special_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.5.4",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "64:ff9b::a00:1",
            "2001:db8::1",
        ] {
            assert!(reason(ip).is_some(), "{ip} should be refused");
        }
        assert_eq!(reason("169.254.169.254"), Some("a link-local address"));
        assert_eq!(reason("::ffff:127.0.0.1"), Some("a loopback address"));
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "8.8.8.8",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(reason(ip), None, "{ip} should be allowed");
        }
    }
}
