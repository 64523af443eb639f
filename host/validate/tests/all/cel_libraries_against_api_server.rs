//! plait's CEL rules answer as kube-apiserver's: one CRD carries a rule per
//! case of the table below, each guarded by the case number `spec.c`, and
//! every case's object is created with `dryRun=All` on the test cluster's
//! kube-apiserver and validated by `plait-validate`. Any difference in
//! accepting or refusing, field path or message fails the test. Updates
//! check transition rules (`oldSelf`) the same way against a stored object.

use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use plait_controlplane::ControlPlane;
use plait_validate::{Catalog, Validator};
use serde_json::{Value, json};

const GROUP: &str = "cel.example.org";

/// `(rule, spec fields)`: the rule runs on `spec`, whose fields are
/// `s` (string), `i` (integer), `d` (number), `dur` (duration), `ts`
/// (date-time), `q` (int or string), `l` (strings), `li` (integers), `ld`
/// (numbers) and `m` (map of strings).
fn cases() -> Vec<(&'static str, Value)> {
    vec![
        // Kubernetes list library.
        ("self.li.isSorted()", json!({"li": [1, 2, 2, 5]})),
        ("self.li.isSorted()", json!({"li": [3, 1]})),
        ("self.l.isSorted()", json!({"l": ["a", "b", "c"]})),
        ("self.l.isSorted()", json!({"l": ["b", "a"]})),
        ("self.ld.isSorted()", json!({"ld": [0.5, 1.5]})),
        ("self.li.sum() == 10", json!({"li": [1, 2, 3, 4]})),
        ("self.li.sum() == 10", json!({"li": [1, 2]})),
        ("self.li.sum() == 0", json!({"li": []})),
        ("self.ld.sum() == 2.0", json!({"ld": [0.5, 1.5]})),
        ("self.ld.sum() > 3.0", json!({"ld": [0.5, 1.5]})),
        ("self.li.min() == 1", json!({"li": [3, 1, 2]})),
        ("self.li.min() == 2", json!({"li": [3, 1, 2]})),
        ("self.li.max() == 3", json!({"li": [3, 1, 2]})),
        ("self.li.max() == 3", json!({"li": []})),
        ("self.li.min() == 3", json!({"li": []})),
        ("self.l.max() == 'c'", json!({"l": ["a", "c", "b"]})),
        ("self.ld.min() < 1.0", json!({"ld": [2.5, 0.5]})),
        ("self.l.indexOf('b') == 1", json!({"l": ["a", "b", "b"]})),
        (
            "self.l.lastIndexOf('b') == 2",
            json!({"l": ["a", "b", "b"]}),
        ),
        ("self.l.indexOf('z') == -1", json!({"l": ["a"]})),
        ("self.l.lastIndexOf('a') == 1", json!({"l": ["a"]})),
        ("self.li.indexOf(2) == 0", json!({"li": [1, 2]})),
        (
            "[1, 2, 3].sum() == 6 && [duration('1s'), duration('2s')].sum() == duration('3s')",
            json!({}),
        ),
        (
            "[timestamp('2024-01-01T00:00:00Z'), timestamp('2023-01-01T00:00:00Z')].min() == timestamp('2023-01-01T00:00:00Z')",
            json!({}),
        ),
        // Kubernetes regex library.
        ("self.s.find('[0-9]+') == '42'", json!({"s": "abc42def7"})),
        ("self.s.find('[0-9]+') == '42'", json!({"s": "abc"})),
        (
            "self.s.findAll('[0-9]+') == ['42', '7']",
            json!({"s": "abc42def7"}),
        ),
        ("self.s.findAll('[0-9]+').size() == 0", json!({"s": "x1"})),
        (
            "self.s.findAll('[a-z]', 2) == ['a', 'b']",
            json!({"s": "abc"}),
        ),
        (
            "self.s.findAll('[a-z]', 0).size() == 0",
            json!({"s": "abc"}),
        ),
        ("self.s.matches('^[a-z]+$')", json!({"s": "abc"})),
        ("self.s.matches('^[a-z]+$')", json!({"s": "ab1"})),
        // Kubernetes URL library.
        ("isURL(self.s)", json!({"s": "https://example.com/a?b=c"})),
        ("isURL(self.s)", json!({"s": "example.com"})),
        ("isURL(self.s)", json!({"s": "/relative/path"})),
        ("isURL(self.s)", json!({"s": "https://a b.com"})),
        (
            "url(self.s).getScheme() == 'https'",
            json!({"s": "https://example.com"}),
        ),
        (
            "url(self.s).getScheme() == 'https'",
            json!({"s": "http://example.com"}),
        ),
        (
            "url(self.s).getHost() == 'example.com:8443'",
            json!({"s": "https://example.com:8443/x"}),
        ),
        (
            "url(self.s).getHostname() == 'example.com'",
            json!({"s": "https://example.com:8443/x"}),
        ),
        (
            "url(self.s).getHostname() == '::1'",
            json!({"s": "https://[::1]:80/"}),
        ),
        (
            "url(self.s).getPort() == '8443'",
            json!({"s": "https://example.com:8443/x"}),
        ),
        (
            "url(self.s).getPort() == ''",
            json!({"s": "https://example.com/x"}),
        ),
        (
            "url(self.s).getEscapedPath() == '/a%20b'",
            json!({"s": "https://example.com/a%20b"}),
        ),
        (
            "url(self.s).getEscapedPath() == '/x'",
            json!({"s": "https://example.com/y"}),
        ),
        (
            "url(self.s).getQuery() == {'a': ['1', '2'], 'b': ['x y']}",
            json!({"s": "https://e.com/?a=1&a=2&b=x+y"}),
        ),
        (
            "url(self.s).getQuery().size() == 0",
            json!({"s": "https://e.com/"}),
        ),
        (
            "url(self.s).getScheme() == 'https'",
            json!({"s": "not a url"}),
        ),
        // Kubernetes quantity library.
        ("isQuantity(self.q)", json!({"q": "1.5Gi"})),
        ("isQuantity(self.q)", json!({"q": "100m"})),
        ("isQuantity(self.q)", json!({"q": "1.5GiB"})),
        ("isQuantity(self.q)", json!({"q": "ten"})),
        (
            "quantity(self.q) == quantity('1536Mi')",
            json!({"q": "1.5Gi"}),
        ),
        (
            "quantity(self.q) == quantity('1536Mi')",
            json!({"q": "1.5G"}),
        ),
        (
            "quantity(self.q).isGreaterThan(quantity('1'))",
            json!({"q": "1001m"}),
        ),
        (
            "quantity(self.q).isGreaterThan(quantity('1'))",
            json!({"q": "1"}),
        ),
        (
            "quantity(self.q).isLessThan(quantity('1Ki'))",
            json!({"q": "1k"}),
        ),
        (
            "quantity(self.q).isLessThan(quantity('1Ki'))",
            json!({"q": "2k"}),
        ),
        (
            "quantity(self.q).compareTo(quantity('1k')) == 0",
            json!({"q": "1000"}),
        ),
        (
            "quantity(self.q).compareTo(quantity('1k')) == 1",
            json!({"q": "1001"}),
        ),
        (
            "quantity(self.q).compareTo(quantity('1k')) == -1",
            json!({"q": "1001"}),
        ),
        ("quantity(self.q).asInteger() == 2048", json!({"q": "2Ki"})),
        ("quantity(self.q).asInteger() == 2", json!({"q": "1.5"})),
        ("quantity(self.q).asInteger() > 0", json!({"q": "1e30"})),
        ("quantity(self.q).isInteger()", json!({"q": "5"})),
        ("quantity(self.q).isInteger()", json!({"q": "500m"})),
        (
            "quantity(self.q).asApproximateFloat() == 0.5",
            json!({"q": "500m"}),
        ),
        (
            "quantity(self.q).asApproximateFloat() > 1.0",
            json!({"q": "500m"}),
        ),
        ("sign(quantity(self.q)) == -1", json!({"q": "-5m"})),
        ("sign(quantity(self.q)) == 1", json!({"q": "0"})),
        (
            "quantity(self.q).add(quantity('500m')) == quantity('2')",
            json!({"q": "1.5"}),
        ),
        (
            "quantity(self.q).add(1) == quantity('3')",
            json!({"q": "2"}),
        ),
        (
            "quantity(self.q).add(1) == quantity('3')",
            json!({"q": "3"}),
        ),
        (
            "sign(quantity(self.q).sub(quantity('1Gi'))) == 0",
            json!({"q": "1024Mi"}),
        ),
        (
            "quantity(self.q).sub(2).isLessThan(quantity('0'))",
            json!({"q": "1"}),
        ),
        (
            "quantity(self.q).isGreaterThan(quantity('0'))",
            json!({"q": "a lot"}),
        ),
        ("quantity(self.q) == quantity('1')", json!({"q": "1e"})),
        (
            "quantity(self.q) == quantity('0.000000001')",
            json!({"q": "0.0000000001"}),
        ),
        // Kubernetes IP library.
        ("isIP(self.s)", json!({"s": "10.0.0.1"})),
        ("isIP(self.s)", json!({"s": "2001:db8::1"})),
        ("isIP(self.s)", json!({"s": "10.0.0.01"})),
        ("isIP(self.s)", json!({"s": "::ffff:10.0.0.1"})),
        ("isIP(self.s)", json!({"s": "fe80::1%eth0"})),
        ("isIP(self.s)", json!({"s": "10.0.0.0/8"})),
        ("ip(self.s).family() == 4", json!({"s": "192.168.1.1"})),
        ("ip(self.s).family() == 4", json!({"s": "2001:db8::1"})),
        ("ip(self.s).isUnspecified()", json!({"s": "0.0.0.0"})),
        ("ip(self.s).isUnspecified()", json!({"s": "::1"})),
        ("ip(self.s).isLoopback()", json!({"s": "::1"})),
        ("ip(self.s).isLoopback()", json!({"s": "128.0.0.1"})),
        ("ip(self.s).isLinkLocalMulticast()", json!({"s": "ff02::1"})),
        (
            "ip(self.s).isLinkLocalMulticast()",
            json!({"s": "224.0.1.1"}),
        ),
        (
            "ip(self.s).isLinkLocalUnicast()",
            json!({"s": "169.254.0.5"}),
        ),
        ("ip(self.s).isLinkLocalUnicast()", json!({"s": "fe80::1"})),
        ("ip(self.s).isGlobalUnicast()", json!({"s": "10.0.0.1"})),
        (
            "ip(self.s).isGlobalUnicast()",
            json!({"s": "255.255.255.255"}),
        ),
        ("ip(self.s).isGlobalUnicast()", json!({"s": "ff00::1"})),
        (
            "string(ip(self.s)) == '2001:db8::1'",
            json!({"s": "2001:DB8:0::1"}),
        ),
        ("ip.isCanonical(self.s)", json!({"s": "2001:db8::1"})),
        ("ip.isCanonical(self.s)", json!({"s": "2001:DB8::1"})),
        ("ip(self.s) == ip('10.0.0.1')", json!({"s": "10.0.0.1"})),
        ("ip(self.s).family() == 4", json!({"s": "not an ip"})),
        ("ip(self.s).family() == 6", json!({"s": "::ffff:1.2.3.4"})),
        // Kubernetes CIDR library.
        ("isCIDR(self.s)", json!({"s": "10.0.0.0/8"})),
        ("isCIDR(self.s)", json!({"s": "10.0.0.0/33"})),
        ("isCIDR(self.s)", json!({"s": "10.0.0.0"})),
        ("isCIDR(self.s)", json!({"s": "2001:db8::/32"})),
        (
            "cidr(self.s).containsIP('10.20.30.40')",
            json!({"s": "10.0.0.0/8"}),
        ),
        (
            "cidr(self.s).containsIP(ip('11.0.0.1'))",
            json!({"s": "10.0.0.0/8"}),
        ),
        (
            "cidr(self.s).containsIP(ip('2001:db8::1'))",
            json!({"s": "10.0.0.0/8"}),
        ),
        (
            "cidr(self.s).containsCIDR('10.1.0.0/16')",
            json!({"s": "10.0.0.0/8"}),
        ),
        (
            "cidr(self.s).containsCIDR(cidr('10.0.0.0/7'))",
            json!({"s": "10.0.0.0/8"}),
        ),
        (
            "cidr(self.s).prefixLength() == 24",
            json!({"s": "192.168.1.0/24"}),
        ),
        (
            "cidr(self.s).prefixLength() == 24",
            json!({"s": "192.168.1.0/25"}),
        ),
        (
            "cidr(self.s).masked() == cidr('10.0.0.0/8')",
            json!({"s": "10.1.2.3/8"}),
        ),
        (
            "string(cidr(self.s).masked()) == '2001:db8::/32'",
            json!({"s": "2001:db8:1::/32"}),
        ),
        (
            "cidr(self.s).ip() == ip('10.1.2.3')",
            json!({"s": "10.1.2.3/8"}),
        ),
        (
            "cidr(self.s).ip().family() == 6",
            json!({"s": "10.1.2.3/8"}),
        ),
        ("cidr(self.s).prefixLength() > 0", json!({"s": "10.1.2.3"})),
        // Kubernetes format library.
        (
            "!format.dns1123Label().validate(self.s).hasValue()",
            json!({"s": "my-name"}),
        ),
        (
            "!format.dns1123Label().validate(self.s).hasValue()",
            json!({"s": "My_Name"}),
        ),
        (
            "!format.dns1123Subdomain().validate(self.s).hasValue()",
            json!({"s": "a.example.com"}),
        ),
        (
            "!format.dns1123Subdomain().validate(self.s).hasValue()",
            json!({"s": "a..b"}),
        ),
        (
            "!format.dns1035Label().validate(self.s).hasValue()",
            json!({"s": "1abc"}),
        ),
        (
            "!format.qualifiedName().validate(self.s).hasValue()",
            json!({"s": "example.com/Name_1"}),
        ),
        (
            "!format.qualifiedName().validate(self.s).hasValue()",
            json!({"s": "a/b/c"}),
        ),
        (
            "!format.dns1123LabelPrefix().validate(self.s).hasValue()",
            json!({"s": "prefix-"}),
        ),
        (
            "!format.labelValue().validate(self.s).hasValue()",
            json!({"s": "-bad"}),
        ),
        (
            "!format.uri().validate(self.s).hasValue()",
            json!({"s": "https://example.com"}),
        ),
        (
            "!format.uuid().validate(self.s).hasValue()",
            json!({"s": "not-a-uuid"}),
        ),
        (
            "!format.byte().validate(self.s).hasValue()",
            json!({"s": "aGVsbG8="}),
        ),
        (
            "!format.date().validate(self.s).hasValue()",
            json!({"s": "2024-02-30"}),
        ),
        (
            "!format.datetime().validate(self.s).hasValue()",
            json!({"s": "2024-02-01T10:00:00Z"}),
        ),
        (
            "format.named(self.s).hasValue()",
            json!({"s": "dns1123Label"}),
        ),
        (
            "format.named(self.s).hasValue()",
            json!({"s": "noSuchFormat"}),
        ),
        (
            "format.dns1123Label().validate(self.s).orValue([]) == ['must be no more than 63 characters']",
            json!({"s": "a".repeat(70)}),
        ),
        (
            "format.dns1123Label().validate(self.s).value() == []",
            json!({"s": "UPPER"}),
        ),
        (
            "format.uuid().validate(self.s).value() == ['does not match the UUID format']",
            json!({"s": "x"}),
        ),
        // Kubernetes semver library.
        ("isSemver(self.s)", json!({"s": "1.2.3"})),
        ("isSemver(self.s)", json!({"s": "1.2"})),
        ("isSemver(self.s)", json!({"s": "v1.2.3"})),
        ("isSemver(self.s, true)", json!({"s": "v1.2"})),
        ("isSemver(self.s)", json!({"s": "1.2.3-rc.1+build.5"})),
        ("semver(self.s).major() == 1", json!({"s": "1.2.3"})),
        ("semver(self.s).minor() == 3", json!({"s": "1.2.3"})),
        ("semver(self.s).patch() == 3", json!({"s": "1.2.3"})),
        (
            "semver(self.s).isLessThan(semver('1.0.0'))",
            json!({"s": "1.0.0-alpha"}),
        ),
        (
            "semver(self.s).isGreaterThan(semver('1.9.0'))",
            json!({"s": "1.10.0"}),
        ),
        (
            "semver(self.s).isGreaterThan(semver('1.9.0'))",
            json!({"s": "1.8.0"}),
        ),
        (
            "semver(self.s).compareTo(semver('1.2.3')) == 0",
            json!({"s": "1.2.3+meta"}),
        ),
        (
            "semver(self.s, true) == semver('1.0.0')",
            json!({"s": "v1"}),
        ),
        ("semver(self.s).major() == 1", json!({"s": "one"})),
        // Strings extension.
        ("self.s.charAt(1) == 'b'", json!({"s": "abc"})),
        ("self.s.charAt(1) == 'b'", json!({"s": "xyz"})),
        ("self.s.indexOf('c') == 2", json!({"s": "abc"})),
        ("self.s.lastIndexOf('a') == 2", json!({"s": "aba"})),
        ("self.s.lowerAscii() == 'abc'", json!({"s": "AbC"})),
        ("self.s.upperAscii() == 'ABC'", json!({"s": "abd"})),
        ("self.s.replace('-', '_') == 'a_b_c'", json!({"s": "a-b-c"})),
        (
            "self.s.replace('-', '_', 1) == 'a_b-c'",
            json!({"s": "a-b-c"}),
        ),
        ("self.s.split(',') == ['a', 'b']", json!({"s": "a,b"})),
        ("self.s.split(',', 1) == ['a,b']", json!({"s": "a,b"})),
        ("self.s.substring(1) == 'bc'", json!({"s": "abc"})),
        ("self.s.substring(1, 2) == 'b'", json!({"s": "abc"})),
        ("self.s.substring(2, 1) == 'b'", json!({"s": "abc"})),
        ("self.s.trim() == 'a'", json!({"s": "  a  "})),
        ("self.l.join('-') == 'a-b'", json!({"l": ["a", "b"]})),
        ("self.l.join() == 'ab'", json!({"l": ["a", "c"]})),
        (
            "strings.quote(self.s) == '\"a\\\\nb\"'",
            json!({"s": "a\nb"}),
        ),
        (
            "'%s has %d items'.format([self.s, size(self.l)]) == 'x has 2 items'",
            json!({"s": "x", "l": ["a", "b"]}),
        ),
        // Sets extension.
        ("sets.contains(self.l, ['a'])", json!({"l": ["a", "b"]})),
        ("sets.contains(self.l, ['c'])", json!({"l": ["a", "b"]})),
        (
            "sets.equivalent(self.l, ['b', 'a', 'a'])",
            json!({"l": ["a", "b"]}),
        ),
        ("sets.equivalent(self.li, [1])", json!({"li": [1, 2]})),
        (
            "sets.intersects(self.l, ['x', 'b'])",
            json!({"l": ["a", "b"]}),
        ),
        ("sets.intersects(self.l, [])", json!({"l": ["a"]})),
        // Numbers, durations and timestamps.
        ("self.i > 5", json!({"i": 10})),
        ("self.i > 5", json!({"i": 3})),
        ("self.d > 1.5", json!({"d": 2})),
        ("self.d == 2.0", json!({"d": 2})),
        ("self.d > 1", json!({"d": 2.5})),
        ("self.i < 2.5", json!({"i": 2})),
        ("uint(self.i) == 2u", json!({"i": 2})),
        (
            "self.i + 1 > self.i",
            json!({"i": 9_223_372_036_854_775_807_i64}),
        ),
        ("self.i / 0 == 1", json!({"i": 3})),
        ("self.d / 0.0 > 1.0", json!({"d": 3})),
        ("self.dur > duration('1h')", json!({"dur": "90m"})),
        ("self.dur > duration('1h')", json!({"dur": "30m"})),
        ("self.dur.getMinutes() == 90", json!({"dur": "1h30m"})),
        (
            "self.ts > timestamp('2024-01-01T00:00:00Z')",
            json!({"ts": "2024-06-01T00:00:00Z"}),
        ),
        (
            "self.ts > timestamp('2024-01-01T00:00:00Z')",
            json!({"ts": "2023-06-01T00:00:00Z"}),
        ),
        (
            "self.ts.getFullYear() == 2024",
            json!({"ts": "2024-06-01T12:00:00Z"}),
        ),
        (
            "self.ts + duration('24h') > timestamp('2024-06-02T00:00:00Z')",
            json!({"ts": "2024-06-01T12:00:00Z"}),
        ),
        (
            "self.ts - timestamp('2024-06-01T00:00:00Z') == duration('12h')",
            json!({"ts": "2024-06-01T12:00:00Z"}),
        ),
        ("type(self.q) == int", json!({"q": 5})),
        ("type(self.q) == string", json!({"q": 5})),
        // Optional types.
        ("self.?s.orValue('none') == 'none'", json!({})),
        ("self.?s.orValue('none') == 'none'", json!({"s": "x"})),
        ("self.m.?a.hasValue()", json!({"m": {"a": "1"}})),
        ("self.m.?a.hasValue()", json!({"m": {"b": "1"}})),
        ("optional.of(self.i).value() == 3", json!({"i": 3})),
        ("self.l[?0].orValue('') == 'a'", json!({"l": ["a"]})),
        // Two-variable comprehensions.
        (
            "self.l.all(i, v, i < 2 || v == 'z')",
            json!({"l": ["a", "b", "z"]}),
        ),
        (
            "self.l.all(i, v, i < 2 || v == 'z')",
            json!({"l": ["a", "b", "c"]}),
        ),
        (
            "self.l.exists(i, v, i == 1 && v == 'b')",
            json!({"l": ["a", "b"]}),
        ),
        ("self.m.exists(k, v, k == v)", json!({"m": {"a": "b"}})),
        (
            "self.m.existsOne(k, v, v == 'x')",
            json!({"m": {"a": "x", "b": "y"}}),
        ),
        (
            "self.m.existsOne(k, v, v == 'x')",
            json!({"m": {"a": "x", "b": "x"}}),
        ),
        (
            "self.l.transformList(i, v, i == 0 ? v : v + v) == ['a', 'bb']",
            json!({"l": ["a", "b"]}),
        ),
        (
            "self.li.transformList(i, v, v > 1, v * i) == [2, 6]",
            json!({"li": [1, 2, 3]}),
        ),
        (
            "self.m.transformMap(k, v, v + '!') == {'a': 'x!'}",
            json!({"m": {"a": "x"}}),
        ),
        (
            "self.m.transformMap(k, v, k != 'b', v).size() == 1",
            json!({"m": {"a": "x", "b": "y"}}),
        ),
        (
            "self.m.transformMapEntry(k, v, {v: k}) == {'x': 'a'}",
            json!({"m": {"a": "x"}}),
        ),
        (
            "self.m.transformMapEntry(k, v, {'one': k}).size() == 1",
            json!({"m": {"a": "x", "b": "y"}}),
        ),
        // Macros over lists and maps.
        ("self.l.all(x, x.size() < 3)", json!({"l": ["a", "bb"]})),
        ("self.l.all(x, x.size() < 3)", json!({"l": ["a", "bbb"]})),
        (
            "self.m.exists(k, self.m[k] == 'v')",
            json!({"m": {"a": "v"}}),
        ),
        (
            "self.m.exists_one(k, k.startsWith('a'))",
            json!({"m": {"a": "1", "ab": "2"}}),
        ),
        ("self.li.map(x, x * 2) == [2, 4]", json!({"li": [1, 2]})),
        (
            "self.li.filter(x, x > 1).size() == 1",
            json!({"li": [1, 2, 3]}),
        ),
        ("self.m.a == 'x'", json!({"m": {"b": "x"}})),
    ]
}

/// Transition rules on `spec.t`, each guarded by `t.c`, with the stored
/// state and the update sent.
fn transitions() -> Vec<(&'static str, Value, Value)> {
    vec![
        ("self.v >= oldSelf.v", json!({"v": 1}), json!({"v": 2})),
        ("self.v >= oldSelf.v", json!({"v": 2}), json!({"v": 1})),
        (
            "quantity(self.q).compareTo(quantity(oldSelf.q)) >= 0",
            json!({"q": "1Gi"}),
            json!({"q": "2Gi"}),
        ),
        (
            "quantity(self.q).compareTo(quantity(oldSelf.q)) >= 0",
            json!({"q": "1Gi"}),
            json!({"q": "512Mi"}),
        ),
        (
            "semver(self.ver).isGreaterThan(semver(oldSelf.ver)) || self.ver == oldSelf.ver",
            json!({"ver": "1.2.3"}),
            json!({"ver": "1.3.0"}),
        ),
        (
            "semver(self.ver).isGreaterThan(semver(oldSelf.ver)) || self.ver == oldSelf.ver",
            json!({"ver": "1.2.3"}),
            json!({"ver": "1.2.3-rc.1"}),
        ),
        (
            "self.ts >= oldSelf.ts",
            json!({"ts": "2024-01-01T00:00:00Z"}),
            json!({"ts": "2023-01-01T00:00:00Z"}),
        ),
        (
            "self.ts >= oldSelf.ts",
            json!({"ts": "2024-01-01T00:00:00Z"}),
            json!({"ts": "2025-01-01T00:00:00Z"}),
        ),
        (
            "sets.contains(self.tags, oldSelf.tags)",
            json!({"tags": ["a", "b"]}),
            json!({"tags": ["a", "b", "c"]}),
        ),
        (
            "sets.contains(self.tags, oldSelf.tags)",
            json!({"tags": ["a", "b"]}),
            json!({"tags": ["a"]}),
        ),
    ]
}

/// CRDs whose rules the API server estimates, by the spec schema they
/// have: over budget (refused) and within it (accepted).
fn cost_cases() -> Vec<(&'static str, Value)> {
    let unbounded_strings = json!({"type": "array", "items": {"type": "string"}});
    let bounded_strings =
        json!({"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 64}});
    vec![
        (
            "a regex over every string of an unbounded list",
            json!({"type": "object", "properties": {"l": unbounded_strings},
                "x-kubernetes-validations": [{"rule": "self.l.all(x, x.matches('^[a-z]+$'))"}]}),
        ),
        (
            "a regex over every string of a bounded list",
            json!({"type": "object", "properties": {"l": bounded_strings},
                "x-kubernetes-validations": [{"rule": "self.l.all(x, x.matches('^[a-z]+$'))"}]}),
        ),
        (
            "a quantity parsed from a string of unknown length",
            json!({"type": "object", "properties": {"i": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "isQuantity(string(self.i))"}, {"rule": "self.i > 0"}]}),
        ),
        (
            "a rule on the items of an unbounded list of unbounded strings",
            json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object",
                "properties": {"name": {"type": "string"}},
                "x-kubernetes-validations": [{"rule": "self.name.contains('-x-')"}]}}}}),
        ),
        (
            "a comprehension over an unbounded map",
            json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}},
                "x-kubernetes-validations": [{"rule": "self.m.all(k, self.m[k].startsWith(k))"}]}),
        ),
        (
            "a comprehension over a bounded map",
            json!({"type": "object", "properties": {"m": {"type": "object", "maxProperties": 16,
                "additionalProperties": {"type": "string", "maxLength": 32}}},
                "x-kubernetes-validations": [{"rule": "self.m.all(k, self.m[k].startsWith(k))"}]}),
        ),
        (
            "a nested comprehension over an unbounded list",
            json!({"type": "object", "properties": {"li": {"type": "array", "items": {"type": "integer"}}},
                "x-kubernetes-validations": [{"rule": "self.li.all(a, self.li.exists(b, a == b))"}]}),
        ),
        (
            "a nested comprehension over a bounded list",
            json!({"type": "object", "properties": {"li": {"type": "array", "maxItems": 50, "items": {"type": "integer"}}},
                "x-kubernetes-validations": [{"rule": "self.li.all(a, self.li.exists(b, a == b))"}]}),
        ),
        (
            "quantities and urls of bounded strings",
            json!({"type": "object", "properties": {"q": {"type": "string", "maxLength": 64}, "u": {"type": "string", "maxLength": 256}},
            "x-kubernetes-validations": [
                {"rule": "quantity(self.q).isLessThan(quantity('10Gi'))"},
                {"rule": "url(self.u).getScheme() == 'https'"},
                {"rule": "isCIDR(self.q) || isIP(self.q) || isSemver(self.q)"},
            ]}),
        ),
        (
            "a two-variable comprehension over an unbounded list",
            json!({"type": "object", "properties": {"l": unbounded_strings},
                "x-kubernetes-validations": [{"rule": "self.l.all(i, v, v.matches('^[a-z]+$'))"}]}),
        ),
        (
            "a two-variable comprehension over a bounded list",
            json!({"type": "object", "properties": {"l": bounded_strings},
                "x-kubernetes-validations": [{"rule": "self.l.all(i, v, i < 5 || v.matches('^[a-z]+$'))"}]}),
        ),
        (
            "string functions over unbounded strings",
            json!({"type": "object", "properties": {"s": {"type": "string"}, "t": {"type": "string"}},
                "x-kubernetes-validations": [{"rule": "self.s.contains(self.t)"}]}),
        ),
    ]
}

fn cost_crd(index: usize, spec: &Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("costs{index}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "names": {"kind": format!("Cost{index}"), "plural": format!("costs{index}")},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": spec},
            }}}],
        },
    })
}

fn guarded(index: usize, rule: &str, guard: &str) -> Value {
    json!({"rule": format!("self.{guard} != {index} || ({rule})"), "message": format!("case {index}")})
}

fn crd() -> Value {
    let rules: Vec<Value> = cases()
        .iter()
        .enumerate()
        .map(|(i, (rule, _))| guarded(i, rule, "c"))
        .collect();
    let transition_rules: Vec<Value> = transitions()
        .iter()
        .enumerate()
        .map(|(i, (rule, _, _))| guarded(i, rule, "c"))
        .collect();
    let string = json!({"type": "string", "maxLength": 128});
    let transition = json!({
        "type": "object",
        "x-kubernetes-validations": transition_rules,
        "properties": {
            "c": {"type": "integer"},
            "v": {"type": "integer"},
            "q": {"type": "string", "maxLength": 32},
            "ver": {"type": "string", "maxLength": 32},
            "ts": {"type": "string", "format": "date-time", "maxLength": 64},
            "tags": {"type": "array", "maxItems": 8, "items": {"type": "string", "maxLength": 32}},
        },
    });
    let properties = json!({
        "c": {"type": "integer"},
        "s": string,
        "i": {"type": "integer"},
        "d": {"type": "number"},
        "dur": {"type": "string", "format": "duration", "maxLength": 32},
        "ts": {"type": "string", "format": "date-time", "maxLength": 64},
        "q": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}], "maxLength": 64},
        "l": {"type": "array", "maxItems": 8, "items": {"type": "string", "maxLength": 32}},
        "li": {"type": "array", "maxItems": 8, "items": {"type": "integer"}},
        "ld": {"type": "array", "maxItems": 8, "items": {"type": "number"}},
        "m": {"type": "object", "maxProperties": 8, "additionalProperties": {"type": "string", "maxLength": 32}},
        "t": transition,
    });
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("celcases.{GROUP}")},
        "spec": {
            "group": GROUP,
            "names": {"kind": "CelCase", "plural": "celcases"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {
                    "type": "object",
                    "required": ["c"],
                    "x-kubernetes-validations": rules,
                    "properties": properties,
                }},
            }}}],
        },
    })
}

fn api(
    client: &kube::Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    };
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// The causes of an API answer as `field: message` lines, sorted.
fn causes<T>(answer: Result<T, kube::Error>, what: &str) -> Vec<String> {
    let mut lines = match answer {
        Ok(_) => Vec::new(),
        Err(kube::Error::Api(status)) => match status.details {
            Some(d) if !d.causes.is_empty() => d
                .causes
                .into_iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect(),
            _ => vec![status.message],
        },
        Err(e) => panic!("{what}: {e}"),
    };
    lines.sort();
    lines
}

fn to_dynamic(object: &Value) -> DynamicObject {
    serde_json::from_value(object.clone()).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn cel_libraries_answer_as_the_api_servers() {
    let cluster = ControlPlane::shared().unwrap_or_else(|e| panic!("test cluster: {e}"));
    let client = cluster.client().await;
    let ns = cluster.namespace("cel").await;
    let crds = api(
        &client,
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        None,
    );
    let crd = crd();
    crds.patch(
        &format!("celcases.{GROUP}"),
        &PatchParams::apply("cel-test").force(),
        &Patch::Apply(&to_dynamic(&crd)),
    )
    .await
    .unwrap_or_else(|e| panic!("the API server refuses the cases' CRD: {e}"));
    let objects = api(&client, GROUP, "v1", "CelCase", "celcases", Some(&ns));
    let mut catalog = Catalog::new();
    catalog
        .add_definition(&crd)
        .unwrap_or_else(|e| panic!("{e}"));
    let validator = Validator::new(catalog);
    let dry_run = PostParams {
        dry_run: true,
        field_manager: None,
    };

    let object = |name: &str, spec: Value| {
        json!({"apiVersion": format!("{GROUP}/v1"), "kind": "CelCase",
            "metadata": {"name": name, "namespace": ns}, "spec": spec})
    };
    let mut failures = Vec::new();
    let (mut accepted, mut refused) = (0, 0);
    for (index, (rule, fields)) in cases().into_iter().enumerate() {
        let mut spec = fields.clone();
        spec["c"] = json!(index);
        let object = object(&format!("case-{index}"), spec);
        // The CRD takes a moment to be served.
        let started = Instant::now();
        let answer = loop {
            match objects.create(&dry_run, &to_dynamic(&object)).await {
                Err(kube::Error::Api(s))
                    if s.code == 404 && started.elapsed() < Duration::from_secs(30) =>
                {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                other => break other,
            }
        };
        let server = causes(answer, rule);
        if server.is_empty() {
            accepted += 1;
        } else {
            refused += 1;
        }
        let mut plait: Vec<String> = validator
            .validate(&object, None)
            .findings
            .iter()
            .map(|f| f.message.clone())
            .collect();
        plait.sort();
        if server != plait {
            failures.push(format!("case {index} `{rule}` on {fields}:\n  api server {server:#?}\n  plait      {plait:#?}"));
        }
    }

    for (index, (rule, before, after)) in transitions().into_iter().enumerate() {
        let name = format!("transition-{index}");
        let mut old_t = before.clone();
        old_t["c"] = json!(index);
        let mut new_t = after.clone();
        new_t["c"] = json!(index);
        let old = object(&name, json!({"c": 100_000, "t": old_t}));
        let stored = objects
            .create(&PostParams::default(), &to_dynamic(&old))
            .await
            .unwrap_or_else(|e| panic!("storing {name}: {e}"));
        let mut new = object(&name, json!({"c": 100_000, "t": new_t}));
        new["metadata"]["resourceVersion"] = json!(stored.metadata.resource_version);
        let server = causes(
            objects.replace(&name, &dry_run, &to_dynamic(&new)).await,
            rule,
        );
        if server.is_empty() {
            accepted += 1;
        } else {
            refused += 1;
        }
        let mut plait: Vec<String> = validator
            .validate(&new, Some(&old))
            .findings
            .iter()
            .map(|f| f.message.clone())
            .collect();
        plait.sort();
        if server != plait {
            failures.push(format!("transition {index} `{rule}` from {before} to {after}:\n  api server {server:#?}\n  plait      {plait:#?}"));
        }
    }
    let crd_validator = Validator::new(Catalog::kubernetes().unwrap_or_else(|e| panic!("{e}")));
    let (mut installable, mut too_expensive) = (0, 0);
    for (index, (what, spec)) in cost_cases().into_iter().enumerate() {
        let crd = cost_crd(index, &spec);
        let server = causes(crds.create(&dry_run, &to_dynamic(&crd)).await, what);
        if server.is_empty() {
            installable += 1;
        } else {
            too_expensive += 1;
        }
        let mut plait: Vec<String> = crd_validator
            .validate(&crd, None)
            .findings
            .iter()
            .map(|f| f.message.clone())
            .collect();
        plait.sort();
        if server != plait {
            failures.push(format!(
                "CRD with {what}:\n  api server {server:#?}\n  plait      {plait:#?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        installable >= 3 && too_expensive >= 3,
        "installable {installable}, too expensive {too_expensive}"
    );
    // The table must exercise both answers.
    assert!(
        accepted >= 60 && refused >= 60,
        "accepted {accepted}, refused {refused}"
    );
}
