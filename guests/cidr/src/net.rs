//! IP prefixes as Go's `net.ParseCIDR` reads them and printed as Go's
//! `net.IP` and `net.IPNet` print them, with the arithmetic of
//! `github.com/apparentlymart/go-cidr` v1.1.0 that upstream computes with
//! (Terraform's `cidrhost`, `cidrnetmask`, `cidrsubnet`, `cidrsubnets`).

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A prefix: its address (bits past the prefix cleared, as Go masks them),
/// the address width (32 or 128) and the prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    pub address: u128,
    pub width: u32,
    pub prefix: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    #[error("invalid CIDR address: {0}")]
    Parse(String),
    #[error("prefix of {prefix} does not accommodate a host numbered {number}")]
    HostNumber { prefix: u32, number: i128 },
    #[error("insufficient address space to extend prefix of {prefix} by {new_bits}")]
    InsufficientSpace { prefix: u32, new_bits: i64 },
    #[error("prefix extension of {new_bits} does not accommodate a subnet numbered {number}")]
    SubnetNumber { new_bits: i64, number: i64 },
    #[error("must extend prefix by at least one bit")]
    TooFewBits,
    #[error("may not extend prefix by more than 32 bits")]
    TooManyBits,
    #[error("would extend prefix to {length} bits, which is too long for an {protocol} address")]
    TooLong { length: i64, protocol: &'static str },
    #[error(
        "not enough remaining address space for a subnet with a prefix of {length} bits after {after}"
    )]
    NoSpace { length: i64, after: Network },
}

fn all_ones(width: u32) -> u128 {
    if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

/// The netmask of a prefix length within `width` bits.
fn mask(prefix: u32, width: u32) -> u128 {
    all_ones(width) & !all_ones(width - prefix.min(width))
}

impl Network {
    /// Go's `net.ParseCIDR`: an IPv4 or IPv6 address without a zone, `/`,
    /// and a decimal prefix length no longer than the address.
    pub fn parse(text: &str) -> Result<Network, CidrError> {
        let error = || CidrError::Parse(text.to_string());
        let (address, length) = text.split_once('/').ok_or_else(error)?;
        let (address, width) = if address.contains(':') {
            let v6: Ipv6Addr = address.parse().map_err(|_| error())?;
            (u128::from(v6), 128)
        } else {
            let v4: Ipv4Addr = address.parse().map_err(|_| error())?;
            (u128::from(u32::from(v4)), 32)
        };
        // Go's dtoi: decimal digits only, leading zeros allowed.
        if length.is_empty() || !length.bytes().all(|b| b.is_ascii_digit()) || length.len() > 4 {
            return Err(error());
        }
        let prefix: u32 = length.parse().map_err(|_| error())?;
        if prefix > width {
            return Err(error());
        }
        Ok(Network {
            address: address & mask(prefix, width),
            width,
            prefix,
        })
    }

    fn with(self, address: u128, prefix: u32) -> Network {
        Network {
            address,
            prefix,
            width: self.width,
        }
    }

    fn last(self) -> u128 {
        self.address | (all_ones(self.width) & !mask(self.prefix, self.width))
    }

    fn contains(self, address: u128) -> bool {
        address & mask(self.prefix, self.width) == self.address
    }

    /// `cidrnetmask`: the mask, printed as an address.
    pub fn netmask(self) -> String {
        address_string(mask(self.prefix, self.width), self.width)
    }

    /// `cidrhost` (go-cidr's `HostBig`): the address numbered `number` in
    /// the prefix; a negative number counts back from the last address.
    pub fn host(self, number: i64) -> Result<String, CidrError> {
        let max = all_ones(self.width - self.prefix);
        let (magnitude, inserted) = if number >= 0 {
            (u128::from(number.unsigned_abs()), i128::from(number))
        } else {
            let back = u128::from(number.unsigned_abs()) - 1;
            // `max` exceeds i128 only for prefixes a count of i64 cannot leave.
            let inserted = i128::try_from(max).map_or(i128::MAX, |max| max - back as i128);
            (back, inserted)
        };
        if magnitude > max {
            return Err(CidrError::HostNumber {
                prefix: self.prefix,
                number: inserted,
            });
        }
        // In range, `inserted` is at least 0 and at most `max`.
        let inserted = u128::try_from(inserted).unwrap_or_default();
        Ok(address_string(self.address | inserted, self.width))
    }

    /// `cidrsubnet` (go-cidr's `SubnetBig`).
    pub fn subnet(self, new_bits: i64, number: i64) -> Result<Network, CidrError> {
        let new_prefix = i64::from(self.prefix) + new_bits;
        if new_prefix > i64::from(self.width) || new_prefix < 0 {
            return Err(CidrError::InsufficientSpace {
                prefix: self.prefix,
                new_bits,
            });
        }
        let max_number = if (0..64).contains(&new_bits) {
            (1u64 << new_bits) - 1
        } else {
            u64::MAX
        };
        if number < 0 || number.unsigned_abs() > max_number {
            return Err(CidrError::SubnetNumber { new_bits, number });
        }
        let new_prefix = new_prefix as u32;
        let shifted = u128::from(number.unsigned_abs())
            .checked_shl(self.width - new_prefix)
            .unwrap_or(0);
        Ok(self.with(self.address | shifted, new_prefix))
    }

    /// `cidrsubnets`: consecutive subnets, each `new_bits` longer than the
    /// prefix, aligned as go-cidr's `PreviousSubnet`/`NextSubnet` align them.
    pub fn subnets(self, new_bits: &[i64]) -> Result<Vec<Network>, CidrError> {
        let mut current: Option<Network> = None;
        let mut subnets = Vec::with_capacity(new_bits.len());
        for &bits in new_bits {
            if bits < 1 {
                return Err(CidrError::TooFewBits);
            }
            if bits > 32 {
                return Err(CidrError::TooManyBits);
            }
            let length = bits + i64::from(self.prefix);
            if length > i64::from(self.width) {
                return Err(CidrError::TooLong {
                    length,
                    protocol: if self.width == 32 { "IPv4" } else { "IPv6" },
                });
            }
            let length = length as u32;
            let previous = *current.get_or_insert_with(|| {
                let before = self.address.wrapping_sub(1) & all_ones(self.width);
                self.with(before & mask(length, self.width), length)
            });
            let (next, rolled_over) = previous.next(length);
            if rolled_over || !self.contains(next.address) {
                return Err(CidrError::NoSpace {
                    length: i64::from(length),
                    after: previous,
                });
            }
            current = Some(next);
            subnets.push(next);
        }
        Ok(subnets)
    }

    /// go-cidr's `NextSubnet`: the prefix of `length` after this one.
    fn next(self, length: u32) -> (Network, bool) {
        let covering = self.with(self.last() & mask(length, self.width), length);
        let after = covering.last().wrapping_add(1) & all_ones(self.width);
        (
            self.with(after & mask(length, self.width), length),
            after == 0,
        )
    }
}

/// An address as Go's `net.IP.String` prints it: IPv4 dotted, IPv6 in
/// RFC 5952 form, an IPv4-mapped IPv6 address as IPv4.
fn address_string(address: u128, width: u32) -> String {
    if width == 32 {
        return Ipv4Addr::from(address as u32).to_string();
    }
    let v6 = Ipv6Addr::from(address);
    match v6.to_ipv4_mapped() {
        Some(v4) => v4.to_string(),
        None => v6.to_string(),
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}",
            address_string(self.address, self.width),
            self.prefix
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(text: &str) -> Network {
        match Network::parse(text) {
            Ok(network) => network,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    fn strings(networks: Result<Vec<Network>, CidrError>) -> Result<Vec<String>, String> {
        networks
            .map(|n| n.iter().map(Network::to_string).collect())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn prefixes_parse_as_go_parses_them() {
        let cases = [
            ("10.0.0.0/8", Ok("10.0.0.0/8")),
            ("10.1.2.3/16", Ok("10.1.0.0/16")),
            ("10.0.0.0/024", Ok("10.0.0.0/24")),
            ("fd00:1::/48", Ok("fd00:1::/48")),
            ("::ffff:10.0.0.0/104", Ok("10.0.0.0/104")),
            ("10.0.0.0/33", Err("invalid CIDR address: 10.0.0.0/33")),
            ("10.0.0.0", Err("invalid CIDR address: 10.0.0.0")),
            ("010.0.0.0/8", Err("invalid CIDR address: 010.0.0.0/8")),
            ("10.0.0.0/+8", Err("invalid CIDR address: 10.0.0.0/+8")),
            ("", Err("invalid CIDR address: ")),
        ];
        for (text, want) in cases {
            let got = Network::parse(text)
                .map(|n| n.to_string())
                .map_err(|e| e.to_string());
            assert_eq!(
                got.as_deref(),
                want.map_err(str::to_string).as_deref(),
                "{text}"
            );
        }
    }

    /// Terraform's documented examples of the same functions.
    #[test]
    fn terraform_examples() {
        assert_eq!(network("10.12.112.0/20").host(16).unwrap(), "10.12.112.16");
        assert_eq!(network("10.12.112.0/20").host(268).unwrap(), "10.12.113.12");
        assert_eq!(network("10.12.112.0/20").host(-2).unwrap(), "10.12.127.254");
        assert_eq!(
            network("fd00:fd12:3456:7890:00a2::/72").host(34).unwrap(),
            "fd00:fd12:3456:7890::22"
        );
        assert_eq!(network("172.16.0.0/12").netmask(), "255.240.0.0");
        assert_eq!(network("fd00::/64").netmask(), "ffff:ffff:ffff:ffff::");
        assert_eq!(
            network("172.16.0.0/12").subnet(4, 2).unwrap().to_string(),
            "172.18.0.0/16"
        );
        assert_eq!(
            network("10.1.2.0/24").subnet(4, 15).unwrap().to_string(),
            "10.1.2.240/28"
        );
        assert_eq!(
            network("fd00:fd12:3456:7890::/56")
                .subnet(16, 162)
                .unwrap()
                .to_string(),
            "fd00:fd12:3456:7800:a200::/72"
        );
        assert_eq!(
            strings(network("10.1.0.0/16").subnets(&[4, 4, 8, 4])),
            Ok(vec![
                "10.1.0.0/20".into(),
                "10.1.16.0/20".into(),
                "10.1.32.0/24".into(),
                "10.1.48.0/20".into()
            ])
        );
        assert_eq!(
            strings(network("fd00:fd12:3456:7890::/56").subnets(&[16, 16, 16, 32])),
            Ok(vec![
                "fd00:fd12:3456:7800::/72".into(),
                "fd00:fd12:3456:7800:100::/72".into(),
                "fd00:fd12:3456:7800:200::/72".into(),
                "fd00:fd12:3456:7800:300::/88".into(),
            ])
        );
    }

    #[test]
    fn out_of_range_numbers_and_bits_fail_with_go_cidr_messages() {
        let cases = [
            (
                network("10.0.0.0/30").host(4).map_err(|e| e.to_string()),
                "prefix of 30 does not accommodate a host numbered 4",
            ),
            (
                network("10.0.0.0/30").host(-5).map_err(|e| e.to_string()),
                "prefix of 30 does not accommodate a host numbered -1",
            ),
            (
                network("10.0.0.0/30")
                    .subnet(4, 0)
                    .map(|n| n.to_string())
                    .map_err(|e| e.to_string()),
                "insufficient address space to extend prefix of 30 by 4",
            ),
            (
                network("10.0.0.0/24")
                    .subnet(2, 4)
                    .map(|n| n.to_string())
                    .map_err(|e| e.to_string()),
                "prefix extension of 2 does not accommodate a subnet numbered 4",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, Err(want.to_string()));
        }
        let subnets = [
            (
                "10.0.0.0/24",
                vec![0],
                "must extend prefix by at least one bit",
            ),
            (
                "10.0.0.0/24",
                vec![33],
                "may not extend prefix by more than 32 bits",
            ),
            (
                "10.0.0.0/24",
                vec![9],
                "would extend prefix to 33 bits, which is too long for an IPv4 address",
            ),
            (
                "10.0.0.0/24",
                vec![1, 1, 1],
                "not enough remaining address space for a subnet with a prefix of 25 bits after 10.0.0.128/25",
            ),
            (
                "0.0.0.0/8",
                vec![1],
                "not enough remaining address space for a subnet with a prefix of 9 bits after 255.128.0.0/9",
            ),
        ];
        for (prefix, bits, want) in subnets {
            assert_eq!(
                strings(network(prefix).subnets(&bits)),
                Err(want.to_string()),
                "{prefix} {bits:?}"
            );
        }
    }
}
