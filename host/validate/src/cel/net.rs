//! IP addresses and CIDR prefixes as the Kubernetes IP and CIDR libraries
//! read them (Go's `netip`, with zones and IPv4-mapped IPv6 refused).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use plait_go_compat::strconv::quote;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ip(pub IpAddr);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// The address as written, not masked.
    pub addr: IpAddr,
    pub bits: u8,
}

/// `netip.ParseAddr`'s error for `raw`, without Go's prefix.
fn parse_addr(raw: &str) -> Result<IpAddr, String> {
    if let Some((_, zone)) = raw.split_once('%') {
        if zone.is_empty() {
            return Err("zone must be a non-empty string".to_string());
        }
        return Err("zone".to_string());
    }
    if raw.contains(':') {
        return raw
            .parse::<Ipv6Addr>()
            .map(IpAddr::V6)
            .map_err(|_| "unable to parse IP".to_string());
    }
    if raw.contains('.') {
        for field in raw.split('.') {
            if field.len() > 1 && field.starts_with('0') {
                return Err("IPv4 field has octet with leading zero".to_string());
            }
        }
        return raw
            .parse::<Ipv4Addr>()
            .map(IpAddr::V4)
            .map_err(|_| "unable to parse IP".to_string());
    }
    Err("unable to parse IP".to_string())
}

fn is_4in6(addr: &IpAddr) -> bool {
    matches!(addr, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

impl Ip {
    /// The Kubernetes library's `ip()`.
    pub fn parse(raw: &str) -> Result<Ip, String> {
        if raw.contains('%') {
            return Err(format!(
                "IP address {} with zone value is not allowed",
                quote(raw)
            ));
        }
        let addr = parse_addr(raw).map_err(|why| {
            format!(
                "IP Address {} parse error during conversion from string: ParseAddr({}): {why}",
                quote(raw),
                quote(raw)
            )
        })?;
        if is_4in6(&addr) {
            return Err(format!(
                "IPv4-mapped IPv6 address {} is not allowed",
                quote(raw)
            ));
        }
        Ok(Ip(addr))
    }

    pub fn family(self) -> i64 {
        match self.0 {
            IpAddr::V4(_) => 4,
            IpAddr::V6(_) => 6,
        }
    }

    pub fn is_unspecified(self) -> bool {
        self.0.is_unspecified()
    }

    pub fn is_loopback(self) -> bool {
        self.0.is_loopback()
    }

    pub fn is_link_local_multicast(self) -> bool {
        match self.0 {
            IpAddr::V4(v4) => {
                let o = v4.octets();
                o[0] == 224 && o[1] == 0 && o[2] == 0
            }
            IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
        }
    }

    pub fn is_link_local_unicast(self) -> bool {
        match self.0 {
            IpAddr::V4(v4) => v4.is_link_local(),
            IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
        }
    }

    /// Go's `Addr.IsGlobalUnicast`: private ranges included.
    pub fn is_global_unicast(self) -> bool {
        if let IpAddr::V4(v4) = self.0
            && v4.is_broadcast()
        {
            return false;
        }
        !self.0.is_unspecified()
            && !self.0.is_loopback()
            && !self.0.is_multicast()
            && !self.is_link_local_unicast()
    }

    /// `Addr.String()`.
    pub fn canonical(self) -> String {
        self.0.to_string()
    }
}

impl Cidr {
    /// The Kubernetes library's `cidr()`.
    pub fn parse(raw: &str) -> Result<Cidr, String> {
        // The library wraps netip's error twice, so.
        let parse_error = |why: &str| {
            format!(
                "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix({}): {why}",
                quote(raw)
            )
        };
        let Some((addr, bits)) = raw.rsplit_once('/') else {
            return Err(parse_error("no '/'"));
        };
        if addr.contains('%') {
            return Err(format!(
                "CIDR {} with zone value is not allowed",
                quote(raw)
            ));
        }
        let addr = parse_addr(addr).map_err(|why| parse_error(&why))?;
        if is_4in6(&addr) {
            return Err(format!(
                "IPv4-mapped IPv6 address {} is not allowed",
                quote(raw)
            ));
        }
        let max = match addr {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        let valid_bits = !bits.is_empty()
            && bits.bytes().all(|b| b.is_ascii_digit())
            && (bits == "0" || !bits.starts_with('0'));
        let bits = bits
            .parse::<u8>()
            .ok()
            .filter(|b| valid_bits && *b <= max)
            .ok_or_else(|| parse_error(&format!("bad bits after slash: {}", quote(bits))))?;
        Ok(Cidr { addr, bits })
    }

    pub fn masked(self) -> Cidr {
        let addr = match self.addr {
            IpAddr::V4(v4) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.bits)).unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
            }
            IpAddr::V6(v6) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.bits))
                    .unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
            }
        };
        Cidr {
            addr,
            bits: self.bits,
        }
    }

    pub fn contains_ip(self, ip: Ip) -> bool {
        if ip.family() != Ip(self.addr).family() {
            return false;
        }
        Cidr {
            addr: ip.0,
            bits: self.bits,
        }
        .masked()
        .addr
            == self.masked().addr
    }

    pub fn contains_cidr(self, other: Cidr) -> bool {
        other.bits >= self.bits && self.contains_ip(Ip(other.addr))
    }

    /// `Prefix.String()`.
    pub fn canonical(self) -> String {
        format!("{}/{}", self.addr, self.bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_classified_as_go_netip_classifies_them() {
        // address, family, unspecified, loopback, link-local multicast,
        // link-local unicast, global unicast
        let cases = [
            ("0.0.0.0", 4, true, false, false, false, false),
            ("127.0.0.1", 4, false, true, false, false, false),
            ("224.0.0.1", 4, false, false, true, false, false),
            ("169.254.1.1", 4, false, false, false, true, false),
            ("10.0.0.1", 4, false, false, false, false, true),
            ("255.255.255.255", 4, false, false, false, false, false),
            ("::", 6, true, false, false, false, false),
            ("::1", 6, false, true, false, false, false),
            ("ff02::1", 6, false, false, true, false, false),
            ("fe80::1", 6, false, false, false, true, false),
            ("2001:db8::1", 6, false, false, false, false, true),
        ];
        for (raw, family, unspecified, loopback, llm, llu, global) in cases {
            let ip = Ip::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!(
                (
                    ip.family(),
                    ip.is_unspecified(),
                    ip.is_loopback(),
                    ip.is_link_local_multicast(),
                    ip.is_link_local_unicast(),
                    ip.is_global_unicast()
                ),
                (family, unspecified, loopback, llm, llu, global),
                "{raw}"
            );
        }
        for raw in [
            "1.2.3",
            "01.2.3.4",
            "::ffff:1.2.3.4",
            "fe80::1%eth0",
            "",
            "1.2.3.4/8",
        ] {
            assert!(Ip::parse(raw).is_err(), "{raw}");
        }
    }

    #[test]
    fn prefixes_contain_and_mask_as_go_netip_does() {
        let net = Cidr::parse("10.1.2.3/16").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(net.masked().canonical(), "10.1.0.0/16");
        assert_eq!(net.canonical(), "10.1.2.3/16");
        let inside = Ip::parse("10.1.200.1").unwrap_or_else(|e| panic!("{e}"));
        let outside = Ip::parse("10.2.0.1").unwrap_or_else(|e| panic!("{e}"));
        assert!(net.contains_ip(inside));
        assert!(!net.contains_ip(outside));
        let sub = Cidr::parse("10.1.5.0/24").unwrap_or_else(|e| panic!("{e}"));
        assert!(net.contains_cidr(sub));
        assert!(!sub.contains_cidr(net));
        for raw in [
            "10.0.0.0",
            "10.0.0.0/33",
            "10.0.0.0/08",
            "::1/129",
            "x/8",
            "::ffff:1.2.3.4/120",
        ] {
            assert!(Cidr::parse(raw).is_err(), "{raw}");
        }
    }
}
