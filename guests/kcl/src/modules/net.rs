//! `net`: IP addresses, host and port, and CIDR arithmetic, with KCL's
//! results and messages. `fqdn` is refused: the program has no network.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{Args, error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::Result;
use crate::value::Value;

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[
    ("CIDR_host", cidr_host),
    ("CIDR_netmask", cidr_netmask),
    ("CIDR_subnet", cidr_subnet),
    ("CIDR_subnets", cidr_subnets),
    ("split_host_port", split_host_port),
    ("join_host_port", join_host_port),
    ("fqdn", fqdn),
    ("parse_IP", ip_string),
    ("IP_string", ip_string),
    ("to_IP4", to_ip4),
    ("to_IP6", to_ip6),
    ("is_IPv4", is_ipv4),
    ("is_IP", is_ip),
    ("is_loopback_IP", is_loopback_ip),
    ("is_multicast_IP", is_multicast_ip),
    (
        "is_interface_local_multicast_IP",
        is_interface_local_multicast_ip,
    ),
    ("is_link_local_multicast_IP", is_link_local_multicast_ip),
    ("is_link_local_unicast_IP", is_link_local_unicast_ip),
    ("is_global_unicast_IP", is_global_unicast_ip),
    ("is_unspecified_IP", is_unspecified_ip),
    ("parse_CIDR", parse_cidr),
    ("is_IP_in_CIDR", is_ip_in_cidr),
];

/// A network: its first address and prefix length (the host part zero).
#[derive(Debug, Clone, Copy)]
struct Cidr {
    addr: IpAddr,
    len: u8,
}

impl Cidr {
    fn family_len(&self) -> u8 {
        if self.addr.is_ipv4() { 32 } else { 128 }
    }

    fn contains(&self, ip: &IpAddr) -> bool {
        let host = u32::from(self.family_len() - self.len);
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                net.to_bits()
                    == ip
                        .to_bits()
                        .checked_shr(host)
                        .unwrap_or(0)
                        .checked_shl(host)
                        .unwrap_or(0)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                net.to_bits()
                    == ip
                        .to_bits()
                        .checked_shr(host)
                        .unwrap_or(0)
                        .checked_shl(host)
                        .unwrap_or(0)
            }
            _ => false,
        }
    }
}

/// Parses `addr/len` (or a lone address, a host network) as the cidr
/// crate KCL uses does, with its messages.
fn parse_cidr_text(text: &str) -> std::result::Result<Cidr, String> {
    let (addr_text, len_text) = match text.rfind('/') {
        Some(pos) => (&text[..pos], Some(&text[pos + 1..])),
        None => (text, None),
    };
    let addr: IpAddr = addr_text
        .parse()
        .map_err(|e| format!("couldn't parse address in network: {e}"))?;
    let family = if addr.is_ipv4() { 32 } else { 128 };
    let len = match len_text {
        None => family,
        Some(l) => l
            .parse::<u8>()
            .map_err(|e| format!("couldn't parse length in network: {e}"))?,
    };
    if len > family {
        return Err(format!(
            "invalid length for network: Network length {len} is too long for {} (maximum: {family})",
            if addr.is_ipv4() { "Ipv4" } else { "Ipv6" }
        ));
    }
    let cidr = Cidr { addr, len };
    if !cidr.contains(&addr) || !host_part_zero(&cidr) {
        return Err("host part of address was not zero".into());
    }
    Ok(cidr)
}

fn host_part_zero(cidr: &Cidr) -> bool {
    let host = u32::from(cidr.family_len() - cidr.len);
    match cidr.addr {
        IpAddr::V4(a) => a.to_bits().checked_shl(32 - host).unwrap_or(0) == 0 || host == 0,
        IpAddr::V6(a) => a.to_bits().checked_shl(128 - host).unwrap_or(0) == 0 || host == 0,
    }
}

fn cidr_arg(name: &str, args: &Args, missing: &str) -> Result<Cidr> {
    let Some(text) = args.get(0, "cidr") else {
        return Err(error(format!("{name}() missing {missing}")));
    };
    parse_cidr_text(text.as_str().unwrap_or(""))
        .map_err(|e| error(format!("{name}() invalid cidr: {e}")))
}

/// `CIDR_subnet(cidr, additional_bits, net_num) -> str`
fn cidr_subnet(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let missing = "3 required positional arguments: 'cidr', 'additional_bits', and 'net_num'";
    let cidr = cidr_arg("CIDR_subnet", &args, missing)?;
    let Some(bits) = args.strict_int(1, "additional_bits")? else {
        return Err(error(format!("CIDR_subnet() missing {missing}")));
    };
    if bits < 0 {
        return Err(error(
            "CIDR_subnet() invalid additional_bits: cannot be negative",
        ));
    }
    let Some(net_num) = args.strict_int(2, "net_num")? else {
        return Err(error(format!("CIDR_subnet() missing {missing}")));
    };
    if net_num < 0 {
        return Err(error("CIDR_subnet() invalid net_num: cannot be negative"));
    }
    allocate(cidr, bits, net_num)
        .map(Value::str)
        .map_err(|m| error(format!("CIDR_subnet() {m}")))
}

/// The `net_num`th subnet `bits` longer than `cidr`, as `addr/len`.
fn allocate(cidr: Cidr, bits: i64, net_num: i64) -> std::result::Result<String, String> {
    let len = i64::from(cidr.len) + bits;
    let fits = |family: &str| {
        format!(
            "invalid additional_bits: would extend network length to {len} bits, which is too long for {family}"
        )
    };
    let no_room =
        || format!("additional_bits of {bits} does not accommodate a net_num of {net_num}");
    match cidr.addr {
        IpAddr::V4(base) => {
            if len > 32 {
                return Err(fits("IPv4"));
            }
            if net_num >= 1i64 << bits {
                return Err(no_room());
            }
            let offset = (net_num << (32 - len)) as u32;
            let addr = Ipv4Addr::from_bits(base.to_bits().wrapping_add(offset));
            Ok(format!("{addr}/{len}"))
        }
        IpAddr::V6(base) => {
            if len > 128 {
                return Err(fits("IPv6"));
            }
            if bits < 64 && net_num as u64 >= 1u64 << bits {
                return Err(no_room());
            }
            if len == 0 {
                return Ok("::/0".into());
            }
            let offset = (net_num as u128)
                .checked_shl((128 - len) as u32)
                .unwrap_or(0);
            let addr = Ipv6Addr::from_bits(base.to_bits().wrapping_add(offset));
            Ok(format!("{addr}/{len}"))
        }
    }
}

/// `CIDR_subnets(cidr, additional_bits: [int]) -> [str]`: consecutive
/// subnets of the given sizes, each after the ones before.
fn cidr_subnets(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let missing = "2 required positional arguments: 'cidr' and 'additional_bits'";
    let cidr = cidr_arg("CIDR_subnets", &args, missing)?;
    let Some(list) = args.get(1, "additional_bits") else {
        return Err(error(format!("CIDR_subnets() missing {missing}")));
    };
    let list = list.as_list().ok_or_else(|| error("invalid list value"))?;
    let sizes = list
        .iter()
        .map(|v| match v {
            Value::Int(i) => Ok(*i),
            _ => Err(error("invalid int value")),
        })
        .collect::<Result<Vec<i64>>>()?;
    let mut net_nums: Vec<i64> = Vec::with_capacity(sizes.len());
    for &bits in &sizes {
        if bits < 0 {
            return Err(error(
                "CIDR_subnets() invalid additional_bits: cannot be negative",
            ));
        }
        let new_bits = i64::from(cidr.len) + bits;
        if cidr.addr.is_ipv4() && new_bits > 32 {
            return Err(error(format!(
                "CIDR_subnets() invalid additional_bits: would extend network length to {new_bits} bits, which is too long for IPv4"
            )));
        }
        if cidr.addr.is_ipv6() {
            if bits > 63 {
                return Err(error(
                    "CIDR_subnets() invalid additional_bits: cannot extend more than 63 bits",
                ));
            }
            if new_bits > 128 {
                return Err(error(format!(
                    "CIDR_subnets() invalid additional_bits: would extend network length to {new_bits} bits, which is too long for IPv6"
                )));
            }
        }
        // Skip past every subnet already allocated that the candidate
        // would overlap, until none does.
        let mut num = 0i64;
        let mut again = true;
        while again {
            again = false;
            for (allocated, &allocated_size) in net_nums.iter().zip(&sizes) {
                let mut allocated_num = *allocated;
                let mut allocated_bits = allocated_size;
                if allocated_bits > bits {
                    allocated_num >>= allocated_bits - bits;
                    allocated_bits = bits;
                }
                if allocated_bits < bits {
                    allocated_num = allocated_num.wrapping_shl((bits - allocated_bits) as u32);
                }
                if allocated_num == num {
                    num = num.wrapping_add(1i64.wrapping_shl((bits - allocated_bits) as u32));
                    again = true;
                }
            }
        }
        net_nums.push(num);
    }
    let mut subnets: Vec<String> = Vec::with_capacity(sizes.len());
    for (&bits, &num) in sizes.iter().zip(&net_nums) {
        if num as u64 >= 1u64.checked_shl(bits as u32).unwrap_or(0) {
            let last = subnets.pop().unwrap_or_default();
            return Err(error(format!(
                "CIDR_subnets() not enough remaining address space for a subnet with a prefix of {} bits after {last}",
                i64::from(cidr.len) + bits
            )));
        }
        subnets.push(allocate(cidr, bits, num).map_err(|m| error(format!("CIDR_subnets {m}")))?);
    }
    Ok(Value::list(subnets.into_iter().map(Value::str).collect()))
}

/// `CIDR_host(cidr, host_num: int) -> str`: the host numbered `host_num`
/// (from the end when negative).
fn cidr_host(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let missing = "2 required positional arguments: 'cidr' and 'host_num'";
    let cidr = cidr_arg("CIDR_host", &args, missing)?;
    let Some(host_num) = args.strict_int(1, "host_num")? else {
        return Err(error(format!("CIDR_host() missing {missing}")));
    };
    let host_len = u32::from(cidr.family_len() - cidr.len);
    let magnitude = if host_num < 0 {
        -(host_num + 1)
    } else {
        host_num
    } as u64;
    if host_len < 64 && (1u64 << host_len) <= magnitude {
        return Err(error(format!(
            "CIDR_host() prefix of {} does not accommodate a host numbered {host_num}",
            cidr.len
        )));
    }
    let addr = match cidr.addr {
        IpAddr::V4(base) => {
            let mut bits = i64::from(base.to_bits());
            if host_num < 0 {
                bits += 1i64 << host_len;
            }
            IpAddr::V4(Ipv4Addr::from_bits(bits.wrapping_add(host_num) as u32))
        }
        IpAddr::V6(base) => {
            let bits = if host_len == 128 {
                host_num as u128
            } else {
                let host_bits = if host_num < 0 {
                    (1u128 << host_len).wrapping_sub(i128::from(host_num).unsigned_abs())
                } else {
                    host_num as u128
                };
                base.to_bits().wrapping_add(host_bits)
            };
            IpAddr::V6(Ipv6Addr::from_bits(bits))
        }
    };
    Ok(Value::str(addr.to_string()))
}

/// `CIDR_netmask(cidr) -> str` (IPv4 only).
fn cidr_netmask(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let cidr = cidr_arg(
        "CIDR_netmask",
        &args,
        "1 required positional argument: 'cidr'",
    )?;
    if cidr.addr.is_ipv6() {
        return Err(error("CIDR_netmask() IPv6 addresses cannot have a netmask"));
    }
    let mask = u32::MAX.checked_shl(32 - u32::from(cidr.len)).unwrap_or(0);
    Ok(Value::str(Ipv4Addr::from_bits(mask).to_string()))
}

/// `parse_CIDR(cidr) -> {ip, mask}`, `{}` when it is not one.
fn parse_cidr(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(text) = Args::new(args, kwargs).get(0, "cidr") else {
        return Err(error(
            "parse_CIDR() missing 1 required positional argument: 'cidr'",
        ));
    };
    let mut dict = crate::value::Dict::new();
    if let Ok(cidr) = parse_cidr_text(text.as_str().unwrap_or("")) {
        dict.insert("ip", Value::str(cidr.addr.to_string()));
        dict.insert("mask", Value::Int(i64::from(cidr.len)));
    }
    Ok(Value::dict(dict))
}

/// `is_IP_in_CIDR(ip, cidr) -> bool`: an IPv4 address is in an IPv6
/// network as its mapped address.
fn is_ip_in_cidr(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let missing = "is_IP_in_CIDR() missing 2 required positional arguments: 'ip' and 'cidr'";
    let Some(ip) = args.str(0, "ip") else {
        return Err(error(missing));
    };
    let ip: IpAddr = ip
        .parse()
        .map_err(|e| error(format!("is_IP_in_CIDR() invalid ip: {e}")))?;
    let Some(cidr) = args.str(1, "cidr") else {
        return Err(error(missing));
    };
    let cidr =
        parse_cidr_text(cidr).map_err(|e| error(format!("is_IP_in_CIDR() invalid cidr: {e}")))?;
    let ip = match (cidr.addr, ip) {
        (IpAddr::V6(_), IpAddr::V4(v4)) => IpAddr::V6(v4.to_ipv6_mapped()),
        _ => ip,
    };
    Ok(Value::Bool(cidr.contains(&ip)))
}

/// `split_host_port(ip_end_point: str) -> [str]`
fn split_host_port(
    _: &mut dyn Interp,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value> {
    let Some(end_point) = Args::new(args, kwargs).get(0, "ip_end_point") else {
        return Err(error(
            "split_host_port() missing 1 required positional argument: 'ip_end_point'",
        ));
    };
    let text = end_point.as_str().unwrap_or("");
    let fail = |what: &str| error(format!("ip_end_point \"{}\" {what}", text.escape_default()));
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(fail("missing port"));
    };
    let pair = |h: &str, p: &str| Ok(Value::list(vec![Value::str(h), Value::str(p)]));
    if host.starts_with('[') {
        let Some(end) = text.find(']') else {
            return Err(fail("missing ']'"));
        };
        if end > host.len() || !text.get(end + 1..).is_some_and(|r| r.starts_with(':')) {
            return Err(fail("missing port"));
        }
        if end + 1 < host.len() {
            return Err(fail("too many colons"));
        }
        if text.get(1..).is_some_and(|r| r.contains('[')) {
            return Err(fail("unexpected '['"));
        }
        if port.contains(']') {
            return Err(fail("unexpected ']'"));
        }
        return pair(host.get(1..end).unwrap_or(""), port);
    }
    if host.contains(':') {
        return Err(fail("too many colons"));
    }
    if text.get(1..).is_some_and(|r| r.contains('[')) {
        return Err(fail("unexpected '['"));
    }
    if text.contains(']') {
        return Err(fail("unexpected ']'"));
    }
    pair(host, port)
}

/// How `join_host_port` prints a host or port value.
fn display(value: &Value) -> String {
    match value {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
        Value::None => "None".to_owned(),
        other => crate::value::json::encode(other, &Default::default(), 0),
    }
}

/// `join_host_port(host, port) -> str`: an IPv6 host in brackets.
fn join_host_port(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let (Some(host), Some(port)) = (args.get(0, "host"), args.get(1, "port")) else {
        return Err(error(
            "join_host_port() missing 2 required positional arguments: 'host' and 'port'",
        ));
    };
    let (host, port) = (display(host), display(port));
    Ok(Value::str(if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }))
}

/// `fqdn(name: str = "") -> str`: refused, names are resolved on the
/// network.
fn fqdn(_: &mut dyn Interp, _: &[Value], _: &[(String, Value)]) -> Result<Value> {
    Err(error(
        "fqdn() is not supported: the program has no network access",
    ))
}

/// The `ip` argument as an address, if it is one.
fn ip_arg(args: &[Value], kwargs: &[(String, Value)], name: &str) -> Result<Option<IpAddr>> {
    match Args::new(args, kwargs).str(0, "ip") {
        Some(text) => Ok(text.parse().ok()),
        None => Err(error(format!(
            "{name}() missing 1 required positional argument: 'ip'"
        ))),
    }
}

/// `IP_string(ip) -> str` (and `parse_IP`): the address in its usual
/// form, `""` when it is not one.
fn ip_string(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let ip = ip_arg(args, kwargs, "IP_string")?;
    Ok(Value::str(ip.map(|ip| ip.to_string()).unwrap_or_default()))
}

/// `to_IP4(ip) -> str`: failures are returned as text, as KCL's are.
fn to_ip4(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(text) = Args::new(args, kwargs).str(0, "ip") else {
        return Err(error(
            "IP_string() missing 1 required positional argument: 'ip'",
        ));
    };
    Ok(Value::str(match text.parse::<Ipv4Addr>() {
        Ok(v4) => v4.to_string(),
        Err(_) => match text.parse::<Ipv6Addr>() {
            Ok(v6) => match v6.to_ipv4() {
                Some(v4) => v4.to_string(),
                None => format!("can not parse {text} ipv6 to ipv4!"),
            },
            Err(e) => format!("can not both parse {text} to ipv6 and ipv4,err:{e}"),
        },
    }))
}

/// `to_IP6(ip) -> str`: an IPv4 address as its mapped IPv6 address.
fn to_ip6(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(text) = Args::new(args, kwargs).str(0, "ip") else {
        return Err(error(
            "IP_string() missing 1 required positional argument: 'ip'",
        ));
    };
    Ok(Value::str(match text.parse::<Ipv6Addr>() {
        Ok(v6) => v6.to_string(),
        Err(_) => match text.parse::<Ipv4Addr>() {
            Ok(v4) => v4.to_ipv6_mapped().to_string(),
            Err(e) => format!("can not both parse {text} to ipv6 and ipv4,err:{e}"),
        },
    }))
}

fn ip_predicate(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    v4: impl FnOnce(Ipv4Addr) -> bool,
    v6: impl FnOnce(Ipv6Addr) -> bool,
) -> Result<Value> {
    Ok(Value::Bool(match ip_arg(args, kwargs, name)? {
        Some(IpAddr::V4(a)) => v4(a),
        Some(IpAddr::V6(a)) => v6(a),
        None => false,
    }))
}

fn is_ipv4(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    ip_predicate("is_IPv4", args, kwargs, |_| true, |_| false)
}

fn is_ip(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    ip_predicate("is_IP", args, kwargs, |_| true, |_| true)
}

fn is_loopback_ip(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    ip_predicate(
        "is_loopback_IP",
        args,
        kwargs,
        |a| a.is_loopback(),
        |a| a.is_loopback(),
    )
}

fn is_multicast_ip(
    _: &mut dyn Interp,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value> {
    ip_predicate(
        "kcl_net_is_multicast_IP",
        args,
        kwargs,
        |a| a.is_multicast(),
        |a| a.is_multicast(),
    )
}

/// IPv6 `ffx1::/16` only.
fn is_interface_local_multicast_ip(
    _: &mut dyn Interp,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value> {
    ip_predicate(
        "is_interface_local_multicast_IP",
        args,
        kwargs,
        |_| false,
        |a| a.segments()[0] & 0xff0f == 0xff01 && a.is_multicast(),
    )
}

/// IPv4 `224.0.0.0/24`, IPv6 `ffx2::/16`.
fn is_link_local_multicast_ip(
    _: &mut dyn Interp,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value> {
    ip_predicate(
        "is_link_local_multicast_IP",
        args,
        kwargs,
        |a| matches!(a.octets(), [224, 0, 0, _]) && a.is_multicast(),
        |a| a.segments()[0] & 0xff0f == 0xff02 && a.is_multicast(),
    )
}

/// IPv4 `169.254.0.0/16`, IPv6 `fe80::/10`.
fn is_link_local_unicast_ip(
    _: &mut dyn Interp,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value> {
    ip_predicate(
        "is_link_local_unicast_IP",
        args,
        kwargs,
        |a| a.is_link_local() && !a.is_multicast(),
        |a| a.segments()[0] & 0xffc0 == 0xfe80 && !a.is_multicast(),
    )
}

/// Whether an IPv4 address is globally routable (KCL's reading of the
/// IANA special-purpose registry).
fn ipv4_is_global(a: Ipv4Addr) -> bool {
    let o = a.octets();
    if matches!(a.to_bits(), 0xc000_0009 | 0xc000_000a) {
        return true;
    }
    let shared = o[0] == 100 && o[1] & 0b1100_0000 == 0b0100_0000;
    let protocol_assignment = o[0] == 192 && o[1] == 0 && o[2] == 0;
    let reserved = o[0] & 240 == 240 && !a.is_broadcast();
    let benchmarking = o[0] == 198 && o[1] & 0xfe == 18;
    !a.is_private()
        && !a.is_loopback()
        && !a.is_link_local()
        && !a.is_broadcast()
        && !a.is_documentation()
        && !shared
        && !protocol_assignment
        && !reserved
        && !benchmarking
        && o[0] != 0
}

/// IPv6 `2000::/3` but documentation and benchmarking, and NAT64
/// addresses of global IPv4 ones.
fn ipv6_is_global(a: Ipv6Addr) -> bool {
    let s = a.segments();
    if s[0] & 0xe000 == 0x2000 {
        let documentation = s[0] == 0x2001 && s[1] == 0xdb8;
        let benchmarking = s[0] == 0x2001 && s[1] == 2 && s[2] == 0;
        return !documentation && !benchmarking;
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let v4 = Ipv4Addr::from_bits((u32::from(s[6]) << 16) + u32::from(s[7]));
        return ipv4_is_global(v4) && !v4.is_multicast();
    }
    false
}

fn is_global_unicast_ip(
    _: &mut dyn Interp,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value> {
    ip_predicate(
        "is_global_unicast_IP",
        args,
        kwargs,
        |a| ipv4_is_global(a) && !a.is_multicast(),
        ipv6_is_global,
    )
}

fn is_unspecified_ip(
    _: &mut dyn Interp,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value> {
    ip_predicate(
        "is_unspecified_IP",
        args,
        kwargs,
        |a| a.is_unspecified(),
        |a| a.is_unspecified(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{call, json, s};
    use crate::value::Value;

    // Expectations from KCL 0.12.3 (its runtime's tests and the grammar
    // suite's net cases).
    #[test]
    fn cidr_functions_as_kcl() {
        let int = Value::Int;
        let list = |items: &[i64]| Value::list(items.iter().map(|i| Value::Int(*i)).collect());
        let cases: &[(&str, Vec<Value>, &str)] = &[
            (
                "parse_CIDR",
                vec![s("192.168.1.0/24")],
                r#"{"ip": "192.168.1.0", "mask": 24}"#,
            ),
            ("parse_CIDR", vec![s("192.168.1.1/24")], "{}"),
            (
                "is_IP_in_CIDR",
                vec![s("192.168.1.1"), s("192.168.1.0/24")],
                "true",
            ),
            (
                "is_IP_in_CIDR",
                vec![s("192.168.0.1"), s("192.168.1.0/24")],
                "false",
            ),
            (
                "is_IP_in_CIDR",
                vec![s("2001:db8::1"), s("2001:db8::/64")],
                "true",
            ),
            (
                "is_IP_in_CIDR",
                vec![s("10.0.0.1"), s("::ffff:0:0/96")],
                "true",
            ),
            (
                "CIDR_subnet",
                vec![s("10.0.0.0/8"), int(8), int(5)],
                r#""10.5.0.0/16""#,
            ),
            (
                "CIDR_subnet",
                vec![s("2001:db8::/56"), int(8), int(25)],
                r#""2001:db8:0:19::/64""#,
            ),
            (
                "CIDR_subnets",
                vec![s("10.0.0.0/8"), list(&[8, 8])],
                r#"["10.0.0.0/16", "10.1.0.0/16"]"#,
            ),
            (
                "CIDR_subnets",
                vec![s("2001:db8::/56"), list(&[8, 8])],
                r#"["2001:db8::/64", "2001:db8:0:1::/64"]"#,
            ),
            (
                "CIDR_subnets",
                vec![s("10.0.0.0/8"), list(&[8, 4, 8])],
                r#"["10.0.0.0/16", "10.16.0.0/12", "10.1.0.0/16"]"#,
            ),
            ("CIDR_host", vec![s("10.0.0.0/8"), int(5)], r#""10.0.0.5""#),
            (
                "CIDR_host",
                vec![s("10.0.0.0/8"), int(-1)],
                r#""10.255.255.255""#,
            ),
            (
                "CIDR_host",
                vec![s("2001:db8::/56"), int(25)],
                r#""2001:db8::19""#,
            ),
            ("CIDR_netmask", vec![s("10.0.0.0/8")], r#""255.0.0.0""#),
            ("CIDR_netmask", vec![s("0.0.0.0/0")], r#""0.0.0.0""#),
            (
                "CIDR_netmask",
                vec![s("0.0.0.0/31")],
                r#""255.255.255.254""#,
            ),
        ];
        for (name, args, want) in cases {
            let got = call("net", name, args, &[]).unwrap();
            assert_eq!(json(&got), *want, "{name}({args:?})");
        }
    }

    #[test]
    fn cidr_errors_are_kcls() {
        let int = Value::Int;
        let cases: &[(&str, Vec<Value>, &str)] = &[
            (
                "CIDR_host",
                vec![s("10.0.0/8"), int(0)],
                "CIDR_host() invalid cidr: couldn't parse address in network: invalid IP address syntax",
            ),
            (
                "CIDR_host",
                vec![s("10.0.0.0/33"), int(0)],
                "CIDR_host() invalid cidr: invalid length for network: Network length 33 is too long for Ipv4 (maximum: 32)",
            ),
            (
                "CIDR_host",
                vec![s("2001:db8:1:2:3:4:5:7/129"), int(0)],
                "CIDR_host() invalid cidr: invalid length for network: Network length 129 is too long for Ipv6 (maximum: 128)",
            ),
            (
                "CIDR_host",
                vec![s("0.0.0.0/256"), int(0)],
                "CIDR_host() invalid cidr: couldn't parse length in network: number too large to fit in target type",
            ),
            (
                "CIDR_host",
                vec![s("10.0.0.0/8/8"), int(0)],
                "CIDR_host() invalid cidr: couldn't parse address in network: invalid IP address syntax",
            ),
            (
                "CIDR_host",
                vec![s("0.0.0.0/-1"), int(0)],
                "CIDR_host() invalid cidr: couldn't parse length in network: invalid digit found in string",
            ),
            (
                "CIDR_host",
                vec![s("10.128.0.0/8"), int(0)],
                "CIDR_host() invalid cidr: host part of address was not zero",
            ),
            (
                "CIDR_host",
                vec![s("2001:db8:1:2:3:4:5:7/127"), int(0)],
                "CIDR_host() invalid cidr: host part of address was not zero",
            ),
            (
                "CIDR_host",
                vec![s("10.0.0.0/24"), int(256)],
                "CIDR_host() prefix of 24 does not accommodate a host numbered 256",
            ),
            (
                "CIDR_host",
                vec![s("10.0.0.0/24"), int(-257)],
                "CIDR_host() prefix of 24 does not accommodate a host numbered -257",
            ),
            (
                "CIDR_host",
                vec![s("0.0.0.0/0"), int(4294967296)],
                "CIDR_host() prefix of 0 does not accommodate a host numbered 4294967296",
            ),
            (
                "CIDR_host",
                vec![s("2001:db8::/66"), int(i64::MIN)],
                "CIDR_host() prefix of 66 does not accommodate a host numbered -9223372036854775808",
            ),
            (
                "CIDR_netmask",
                vec![s("2001:db8::/64")],
                "CIDR_netmask() IPv6 addresses cannot have a netmask",
            ),
            (
                "CIDR_subnet",
                vec![s("10.0.0.0/8"), int(30), int(0)],
                "CIDR_subnet() invalid additional_bits: would extend network length to 38 bits, which is too long for IPv4",
            ),
            (
                "CIDR_subnet",
                vec![s("10.0.0.0/8"), int(2), int(4)],
                "CIDR_subnet() additional_bits of 2 does not accommodate a net_num of 4",
            ),
            (
                "CIDR_subnets",
                vec![s("10.0.0.0/30"), Value::list(vec![int(1), int(1), int(1)])],
                "CIDR_subnets() not enough remaining address space for a subnet with a prefix of 31 bits after 10.0.0.2/31",
            ),
        ];
        for (name, args, want) in cases {
            let err = call("net", name, args, &[]).unwrap_err();
            assert_eq!(err.message, *want, "{name}({args:?})");
        }
    }

    #[test]
    fn addresses_as_kcl() {
        let cases: &[(&str, Vec<Value>, &str)] = &[
            (
                "split_host_port",
                vec![s("B-K0NZJGH6-0048.local:80")],
                r#"["B-K0NZJGH6-0048.local", "80"]"#,
            ),
            ("split_host_port", vec![s("[::1]:80")], r#"["::1", "80"]"#),
            (
                "join_host_port",
                vec![s("B-K0NZJGH6-0048.local"), Value::Int(80)],
                r#""B-K0NZJGH6-0048.local:80""#,
            ),
            ("join_host_port", vec![s("::1"), s("80")], r#""[::1]:80""#),
            (
                "to_IP4",
                vec![s("::FFFF:192.168.1.10")],
                r#""192.168.1.10""#,
            ),
            (
                "to_IP4",
                vec![s("x")],
                r#""can not both parse x to ipv6 and ipv4,err:invalid IPv6 address syntax""#,
            ),
            (
                "to_IP6",
                vec![s("192.168.1.10")],
                r#""::ffff:192.168.1.10""#,
            ),
            ("IP_string", vec![s("2001:0db8::0001")], r#""2001:db8::1""#),
            ("IP_string", vec![s("x")], r#""""#),
            ("is_IP", vec![s("192.0022.1.1")], "false"),
            (
                "is_IP",
                vec![s("2001:0db8:3c4d:0015:0000:0000:1a2f:1a2b")],
                "true",
            ),
            ("is_IPv4", vec![s("::1")], "false"),
            ("is_multicast_IP", vec![s("239.255.255.255")], "true"),
            ("is_loopback_IP", vec![s("127.0.0.1")], "true"),
            ("is_link_local_multicast_IP", vec![s("224.0.0.0")], "true"),
            ("is_link_local_multicast_IP", vec![s("ff12::1")], "true"),
            ("is_link_local_unicast_IP", vec![s("fe80::2012:1")], "true"),
            ("is_global_unicast_IP", vec![s("220.181.108.89")], "true"),
            (
                "is_global_unicast_IP",
                vec![s("2607:f8b0:4005:802::200e")],
                "true",
            ),
            ("is_global_unicast_IP", vec![s("64:ff9b::800:1")], "true"),
            ("is_global_unicast_IP", vec![s("10.0.0.1")], "false"),
            ("is_unspecified_IP", vec![s("0.0.0.0")], "true"),
            (
                "is_interface_local_multicast_IP",
                vec![s("224.0.0.0")],
                "false",
            ),
            (
                "is_interface_local_multicast_IP",
                vec![s("ff11::1")],
                "true",
            ),
        ];
        for (name, args, want) in cases {
            let got = call("net", name, args, &[]).unwrap();
            assert_eq!(json(&got), *want, "{name}({args:?})");
        }
        let err = call("net", "split_host_port", &[s("a:b:c")], &[]).unwrap_err();
        assert_eq!(err.message, "ip_end_point \"a:b:c\" too many colons");
        let err = call("net", "split_host_port", &[s("abc")], &[]).unwrap_err();
        assert_eq!(err.message, "ip_end_point \"abc\" missing port");
    }
}
