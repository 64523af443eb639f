//! One or more programs per feature of the language, each compared with
//! KCL 0.12.3: the value model, schemas, lambdas, comprehensions, strings,
//! the builtins, the system modules, errors, and `kcl run`'s flags.

use crate::{Program, compare};

/// (name, program): the name says what the program shows.
const CASES: &[(&str, &str)] = &[
    // Lexical rules, literals, operators.
    (
        "literals_of_every_kind",
        r##"i = 42
neg = -7
h = 0x1F
o = 0o17
b = 0b101
f = 3.25
e = 1e3
t = True
n = None
s = "double"
s2 = 'single'
esc = "tab\there\nnew \"q\" \\ \u00e9"
raw = r"raw\n${x}"
multi = """line one
line two"""
multi2 = '''  indented
'''
"##,
    ),
    (
        "operator_precedence",
        r##"a = 1 + 2 * 3 ** 2
b = (1 + 2) * 3
c = -2 ** 2
d = 7 // 2
e = -7 // 2
f = 7 % 3
g = -7 % 3
h = 7 / 2
i = 1 < 2 < 3
j = not 1 in [1, 2]
k = 1 not in [2]
l = 5 & 3 | 8 ^ 1
m = 1 << 4 >> 2
n = ~5
o = True and False or True
p = "a" * 3
q = [1] * 2 + [3]
r = 2 if 1 > 2 else 3
s = None or "default"
t = 0 or [] or "x"
"##,
    ),
    (
        "indentation_and_line_continuation",
        r##"x = 1 + \
    2
schema S:
    a: int = 1

    b: int = 2
items = [
    1,
    2,
]
s = S {}
"##,
    ),
    (
        "float_output",
        r##"a = 1.0
b = 0.1 + 0.2
c = 1e20
d = 1.5e-7
e = 10 / 4
f = float(3)
g = 2.0 * 3
h = -0.0
"##,
    ),
    (
        "strings_that_need_yaml_quotes",
        r##"a = "yes"
b = "123"
c = "null"
d = ""
e = "a: b"
f = "- x"
g = "multi\nline\n"
h = "#comment"
i = "True"
j = " lead"
k = "it's"
l = "1.5"
m = "~"
n = "@at"
o = "ünïcode"
"##,
    ),
    // The value model.
    (
        "config_unification_merges_in_order",
        r##"config = {
    metadata: {name = "a"}
    spec: {replicas = 1}
    metadata: {labels = {app = "a"}}
}
"##,
    ),
    (
        "config_override_and_insert",
        r##"a = {
    x = 1
    l = [1, 2]
    x = 2
    l += [3]
}
b = a | {l += [4], x = 5}
"##,
    ),
    (
        "insert_at_an_index",
        r##"_a = [0, 1] * 2
_a[0] = 2
_a[1] += 2
a = _a
_b = [{k.l = [0] * 2}]
_b[0].k.l[1] += 1
b = _b
"##,
    ),
    (
        // KCL 0.12.3 and 0.13.2 alike: `+=` extends the list the key holds,
        // so a list taken from a name grows under that name too.
        "config_insert_extends_the_referenced_list",
        r##"v0 = []
v3 = {y = v0, y += [1]}
l = [1]
d = {a = l, a += [2]}
"##,
    ),
    (
        "key_order_is_first_appearance",
        r##"d = {z = 1, a = 2, m = 3, a = 4}
e = {b = 1} | {a = 2} | {b = 3}
f = {**d, c = 5, z = 6}
"##,
    ),
    (
        "dotted_keys_nest",
        r##"d = {
    a.b.c = 1
    a.b.d = 2
    a.e = "x"
}
"##,
    ),
    (
        "spread_of_dicts_and_lists",
        r##"base = {a = 1, b = 2}
d = {**base, b = 3, c = 4}
l = [*[1, 2], 3, *[]]
n = {**None, x = 1}
"##,
    ),
    (
        "if_elif_else_in_config_and_list",
        r##"env = "prod"
replicas = 3
d = {
    name = "app"
    if env == "prod":
        tier = "high"
    elif env == "dev":
        tier = "low"
    else:
        tier = "none"
    if replicas > 5:
        big = True
}
l = [
    1
    if env == "prod": 2
    if env == "dev": 3 else: 4
]
"##,
    ),
    (
        "union_of_dicts_lists_and_schemas",
        r##"schema P:
    name: str
    age?: int
a = {x = 1, y = {z = 1}} | {y = {w = 2}}
b = [1, 2, 3] | [4]
c = P {name = "a"} | {age = 3}
d = {x = 1}
d2 = d | {x = 2}
"##,
    ),
    (
        "optional_selectors",
        r##"n = None
d = {a = {b = 1}}
l = [1, 2]
a = n?.a
b = d?.a?.b
c = d?.x?.y
e = n?[0]
f = l?[1]
g = d?["a"]
"##,
    ),
    (
        "optional_selectors_on_falsy_values_are_none",
        r##"schema S:
    p?: int
    x?: int
get = lambda o { o?.x }
at = lambda o { o?[0] }
part = lambda o { o?[0:1] }
lower = lambda o { o?.lower() }
ready = lambda o = "" { o?.Resource }
attrs = [get(""), get(0), get(0.0), get(False), get([]), get({}), get(None)]
indexes = [at(""), at(0), at([]), at({}), at(None), at(False)]
slices = [part(""), part(0), part([]), part({}), part(None)]
default = ready()
missing_key = typeof(get({a = 1}))
present_key = get({x = 2})
unset_attribute = typeof(get(S {}))
set_attribute = get(S {x = 5})
first = at("ab")
sliced = part("abc")
method_of_falsy = typeof(lower(""))
method_of_none = typeof(lower(None))
method = lower("AB")
chained = get({x = {y = 1}})?.y
"##,
    ),
    (
        "optional_selector_on_an_int",
        "get = lambda o { o?.x }\nr = get(1)\n",
    ),
    (
        "optional_selector_on_a_float",
        "get = lambda o { o?.x }\nr = get(1.5)\n",
    ),
    (
        "optional_selector_on_true",
        "get = lambda o { o?.x }\nr = get(True)\n",
    ),
    (
        "optional_selector_on_a_list",
        "get = lambda o { o?.x }\nr = get([1])\n",
    ),
    (
        "optional_selector_on_a_string",
        "get = lambda o { o?.x }\nr = get(\"a\")\n",
    ),
    (
        "optional_selector_of_a_missing_schema_attribute",
        "schema S:\n    p?: int\n    x?: int\nget = lambda o { o?.x }\nr = get(S {p = 1})\n",
    ),
    (
        "optional_selector_guards_one_step_only",
        "get = lambda o { o?.x.y }\nr = get(\"\")\n",
    ),
    (
        "optional_selector_of_a_statically_typed_string",
        "o = \"\"\nx = o?.Resource\n",
    ),
    (
        "optional_index_on_an_int",
        "at = lambda o { o?[0] }\nr = at(1)\n",
    ),
    (
        "optional_index_on_true",
        "at = lambda o { o?[0] }\nr = at(True)\n",
    ),
    (
        "optional_index_guards_one_step_only",
        "at = lambda o { o?[0][1] }\nr = at([])\n",
    ),
    (
        "optional_slice_on_an_int",
        "part = lambda o { o?[0:1] }\nr = part(1)\n",
    ),
    (
        "optional_slice_on_a_dict",
        "part = lambda o { o?[0:1] }\nr = part({a = 1})\n",
    ),
    (
        "optional_method_call_evaluates_its_arguments",
        "lower = lambda o { o?.lower(1 / 0) }\nr = lower(\"\")\n",
    ),
    (
        "calling_a_value_that_is_no_function",
        "call = lambda o { o() }\nr = typeof(call(1))\n",
    ),
    (
        "none_and_undefined",
        r##"a = None
b = Undefined
c = [None, Undefined, 1]
d = {x = None, y = Undefined}
e = isnullish(a)
f = a == None
"##,
    ),
    (
        "exported_names_are_immutable",
        r##"a = 1
a = 2
"##,
    ),
    (
        "package_variables_evaluate_out_of_order",
        r##"c = b * 2
b = a + 1
a = 1
_hidden = c + 1
d = _hidden
"##,
    ),
    (
        "schema_attributes_evaluate_out_of_order",
        r##"schema S:
    c: int = b * 2
    b: int = a + 1
    a: int = 1
s = S {}
t = S {a = 10}
"##,
    ),
    (
        "mutable_names_with_underscore_and_local_reassignment",
        r##"_x = 1
_x = _x + 1
y = _x
"##,
    ),
    (
        "list_and_dict_indexing_and_slicing",
        r##"l = [0, 1, 2, 3, 4, 5]
a = l[1:4]
b = l[::2]
c = l[-1]
d = l[::-1]
e = "hello"[1:3]
f = {a = 1}["a"]
g = l[-2:]
"##,
    ),
    (
        "index_out_of_range_is_an_error",
        r##"l = [1, 2]
x = l[5]
"##,
    ),
    (
        "membership_and_comparison",
        r##"a = "b" in {b = 1}
b = 2 in [1, 2]
c = "ell" in "hello"
d = [1, 2] == [1, 2]
e = {a = 1} == {a = 1}
h = 1 == 1.0
i = None == None
"##,
    ),
    // Schemas.
    (
        "schema_attributes_optional_and_defaults",
        r##"schema Person:
    name: str
    age: int = 18
    nickname?: str
    tags: [str] = []
    labels: {str:str} = {}
alice = Person {name = "alice"}
bob = Person {name = "bob", age = 30, nickname = "b"}
"##,
    ),
    (
        "schema_required_attribute_missing",
        r##"schema Person:
    name: str
p = Person {}
"##,
    ),
    (
        "schema_attribute_union_assignment",
        r##"schema S:
    labels: {str:str} = {a = "1"}
    labels |= {b = "2"}
s = S {}
"##,
    ),
    (
        "schema_check_block_passes_and_fails",
        r##"schema Port:
    port: int
    check:
        0 < port < 65536, "port must be in range, got ${port}"
        port != 22 if port, "ssh"
ok = Port {port = 80}
bad = Port {port = 70000}
"##,
    ),
    (
        "schema_check_without_message",
        r##"schema S:
    a: int
    check:
        a > 1
s = S {a = 0}
"##,
    ),
    (
        "schema_inheritance",
        r##"schema Base:
    kind: str = "base"
    name: str
schema Derived(Base):
    kind: str = "derived"
    extra: int = 1
d = Derived {name = "x"}
isbase = typeof(d)
"##,
    ),
    (
        "schema_mixins_and_protocols",
        r##"protocol NameProtocol:
    first: str
    last: str
mixin FullNameMixin for NameProtocol:
    full: str = "${first} ${last}"
schema Person:
    mixin [FullNameMixin]
    first: str
    last: str
p = Person {first = "Ada", last = "Lovelace"}
"##,
    ),
    (
        "schema_parameters",
        r##"schema Replicas[n: int, prefix: str = "r"]:
    count: int = n * 2
    name: str = "${prefix}-${n}"
a = Replicas(2) {}
b = Replicas(n=3, prefix="x") {}
"##,
    ),
    (
        "schema_index_signatures",
        r##"schema Labels:
    [str]: str
schema Limits:
    cpu: str = "1"
    [k: str]: str
    check:
        len(k) < 10 if k, "key too long"
schema Rest:
    name: str
    [...str]: int
l = Labels {a = "1", b = "2"}
m = Limits {memory = "1Gi"}
r = Rest {name = "x", a = 1}
"##,
    ),
    (
        "schema_index_signature_type_mismatch",
        r##"schema Labels:
    [str]: str
l = Labels {a = 1}
"##,
    ),
    (
        "schema_decorators",
        r##"@info(version="1")
schema S:
    @deprecated(version="1.0", reason="use b", strict=False)
    a?: int
    b: int = 1
s = S {b = 2}
"##,
    ),
    (
        "schema_deprecated_strict_is_an_error",
        r##"schema S:
    @deprecated(version="1.0", reason="use b")
    a?: int
s = S {a = 1}
"##,
    ),
    (
        "schema_instances",
        r##"schema S:
    a: int
x = S {a = 1}
y = S {a = 2}
count = len(S.instances())
values = [s.a for s in S.instances()]
"##,
    ),
    (
        "rules",
        r##"protocol AProtocol:
    a: int
rule R for AProtocol:
    a > 0, "a must be positive"
ok = R {a = 1}
"##,
    ),
    (
        "rule_failure",
        r##"rule Positive:
    1 < 0, "never"
r = Positive()
"##,
    ),
    (
        "schema_types_convert_at_run_time",
        r##"schema Inner:
    x: int
    y: float = 1
schema Outer:
    f: float
    inner: Inner
    lit: "a" | "b" = "a"
    u: int | str = "s"
    items: [Inner] = []
    byname: {str:Inner} = {}
o = Outer {f = 1, inner = {x = 2}, items = [{x = 3}], byname = {k = {x = 4}}}
"##,
    ),
    (
        "schema_literal_type_mismatch",
        r##"schema S:
    lit: "a" | "b"
s = S {lit = "c"}
"##,
    ),
    (
        "schema_attribute_type_mismatch",
        r##"schema S:
    x: int
s = S {x = "s"}
"##,
    ),
    (
        "schema_cannot_add_member",
        r##"schema S:
    x: int
s = S {x = 1, y = 2}
"##,
    ),
    (
        "schema_relaxed_by_index_signature_and_nested_schemas",
        r##"schema Meta:
    name: str
    labels?: {str:str}
schema Res:
    apiVersion: str = "v1"
    kind: str
    metadata: Meta
r = Res {kind = "ConfigMap", metadata.name = "cm", metadata.labels.app = "a"}
"##,
    ),
    (
        "schema_body_statements_and_conditions",
        r##"schema S:
    env: str
    replicas: int = 1
    if env == "prod":
        replicas = 3
    _private = replicas * 2
    doubled: int = _private
a = S {env = "prod"}
b = S {env = "dev"}
"##,
    ),
    (
        "typed_top_level_variables",
        r##"a: int = 1
b: float = 2
c: [str] = ["x"]
d: {str:int} = {k = 1}
"##,
    ),
    (
        "typed_variable_mismatch",
        r##"a: int = "x"
"##,
    ),
    // Lambdas and closures.
    (
        "lambdas_and_closures",
        r##"add = lambda x: int, y: int -> int {
    x + y
}
make_adder = lambda n {
    lambda x {
        x + n
    }
}
add2 = make_adder(2)
a = add(1, 2)
b = add2(5)
c = (lambda x, y = 10 { x * y })(3)
d = add(y = 4, x = 1)
e = [(lambda x { x * x })(i) for i in range(4)]
"##,
    ),
    (
        "lambda_statements_and_recursion_limits",
        r##"f = lambda x {
    _y = x * 2
    if _y > 4:
        _y = 4
    _y
}
a = [f(i) for i in range(5)]
"##,
    ),
    (
        "lambda_wrong_argument_count",
        r##"f = lambda x, y { x + y }
a = f(1)
"##,
    ),
    (
        "lambda_return_type_checked",
        r##"f = lambda x -> str { x }
a = f(1)
"##,
    ),
    // Comprehensions and quantifiers.
    (
        "comprehensions_with_several_clauses",
        r##"a = [x * y for x in range(1, 4) for y in range(x) if (x + y) % 2 == 0]
b = {"k${i}": i * i for i in range(4) if i != 2}
c = [k + "=" + str(v) for k, v in {a = 1, b = 2}]
d = [i for i, _ in ["x", "y"]]
e = [c for c in "abc"]
f = {v: k for k, v in {a = "x", b = "y"}}
g = [[i, j] for i in [1, 2] if i > 1 for j in [3, 4]]
"##,
    ),
    (
        "quantifiers",
        r##"l = [1, 2, 3, 4]
a = all x in l { x > 0 }
b = any x in l { x > 3 }
c = map x in l { x * 10 }
d = filter x in l { x % 2 == 0 }
e = all k, v in {a = 1, b = 2} { v > 0 }
f = filter k, v in {a = 1, b = 2} { v > 1 }
g = map i, x in l { i + x }
"##,
    ),
    (
        "assert_passes_and_fails",
        r##"a = 1
assert a == 1
assert a > 0, "positive"
assert a > 1, "a is ${a}, not more than 1"
"##,
    ),
    (
        "assert_with_condition",
        r##"a = 1
assert a > 5 if a > 10, "skipped"
b = 2
"##,
    ),
    // Strings.
    (
        "interpolation_and_format_specs",
        r##"name = "kcl"
n = 255
f = 3.14159
a = "hello ${name}!"
b = "${n + 1} ${[1, 2]} ${None} ${True} ${f}"
c = "${d: #json} ${d:#yaml} ${l: #json}"
d = {k = "v", n = [1, 2]}
l = [1, "two"]
"##,
    ),
    (
        "format_mini_language",
        r##"a = "{} {} {}".format(1, "b", 2.5)
b = "{1} {0} {1}".format("x", "y")
c = "{name}-{n}".format(name = "a", n = 1)
d = "{:>6}|{:<6}|{:^6}|{:*^7}".format("r", "l", "c", "s")
e = "{:05d} {:+d} {: d} {:,}".format(42, 42, 42, 1234567)
f = "{:.3f} {:e} {:.1%} {:g}".format(3.14159, 12345.678, 0.256, 0.00001)
g = "{:x} {:X} {:o} {:b} {:#x} {:#b}".format(255, 255, 8, 5, 255, 5)
h = "{{literal}} {}".format(1)
i = "{!r} {!s}".format("q", "q")
j = "{0[0]} {1[k]}".format([7], {k = "v"})
"##,
    ),
    (
        "string_methods",
        r##"s = "  Hello, World  "
a = s.strip()
b = s.lstrip()
c = s.rstrip()
d = "hello world".capitalize()
e = "hello world".title()
f = "Hello".upper() + "Hello".lower()
g = "a,b,,c".split(",")
h = "a b  c".split()
i = "a,b,c".rsplit(",", 1)
j = "l1\nl2\r\nl3".splitlines()
k = "-".join(["a", "b", "c"])
l = "hello".replace("l", "L")
m = "hello".replace("l", "L", 1)
n = ["hello".startswith("he"), "hello".endswith("lo"), "hello".startswith("x")]
o = ["hello".find("l"), "hello".rfind("l"), "hello".find("z"), "hello".index("e"), "hello".rindex("l")]
p = ["hello".count("l"), "ab12".isalnum(), "ab".isalpha(), "12".isdigit(), "ab".islower(), "AB".isupper(), "  ".isspace(), "Ab Cd".istitle()]
q = ["prefix_x".removeprefix("prefix_"), "x.k".removesuffix(".k")]
x = "Straße".lower()
"##,
    ),
    (
        "string_method_wrong_type",
        r##"a = "x".upper(1)
"##,
    ),
    // Builtins.
    (
        "option_with_type_required_default",
        r##"a = option("missing", default = "d")
b = option("missing2")
c = option("n", type = "int", default = 3)
"##,
    ),
    (
        "option_required_missing",
        r##"a = option("needed", required = True)
"##,
    ),
    (
        "print_writes_before_the_output",
        r##"print("hello")
print("a", 1, [1, 2], {k = "v"}, None, True)
print("x", "y", sep = "-", end = "!\n")
a = 1
"##,
    ),
    (
        "builtin_functions",
        r##"a = len([1, 2, 3]) + len("abc") + len({a = 1})
b = [typeof(1), typeof(1.0), typeof("s"), typeof([]), typeof({}), typeof(None), typeof(True), typeof(lambda {})]
c = [multiplyof(6, 3), multiplyof(7, 3)]
d = [isunique([1, 2]), isunique([1, 1])]
e = [isnullish(None), isnullish(Undefined), isnullish(0), isnullish([])]
f = sorted([3, 1, 2])
g = sorted(["b", "a"], reverse = True)
h = sorted({b = 1, a = 2})
i = [range(3), range(1, 7, 2), range(5, 0, -2)]
j = zip([1, 2, 3], ["a", "b"])
k = [abs(-3), abs(-2.5)]
l = [all_true([1, True]), all_true([1, 0]), any_true([0, None, 1]), any_true([])]
m = [max(1, 5, 3), max([4, 2]), min(3, 1), min([7, 8]), max("ab", "b")]
n = [sum([1, 2, 3]), sum([1.5, 2]), sum([[1], [2]], [])]
o = [pow(2, 10), pow(2, -1), pow(3, 2, 5), pow(2.0, 3)]
p = [round(2.5), round(3.5), round(2.675, 2), round(7)]
q = [hex(255), bin(5), oct(8), ord("a")]
"##,
    ),
    (
        "conversions",
        r##"a = [int("42"), int(3.9), int(-3.9), int("0x1f", 16) if False else 0, int(True)]
b = [float("1.5"), float(2), float("1e3")]
c = [str(1), str(1.0), str(None), str(True), str([1, "a"]), str({k = "v"})]
d = [bool(0), bool(""), bool([]), bool({}), bool(None), bool("x"), bool(1.5)]
e = list({a = 1, b = 2})
f = dict([["a", 1], ["b", 2]]) if False else dict({a = 1})
g = list("ab")
"##,
    ),
    (
        "conversion_failure",
        r##"a = float("abc")
"##,
    ),
    (
        "integer_overflow_is_an_error",
        r##"a = 9223372036854775807
b = a + 1
"##,
    ),
    (
        "division_by_zero_is_an_error",
        r##"a = 1 / 0
"##,
    ),
    (
        "integer_division_by_zero_is_an_error",
        r##"a = 1 % 0
"##,
    ),
    (
        "number_multipliers",
        r##"a = 1Ki
b = 2Mi
c = 1K
d = 1.5Gi if False else 1G
e = 5m if False else 1
"##,
    ),
    // System modules.
    (
        "module_regex",
        r##"import regex
a = regex.match("hello world", "wor")
b = regex.match("hello", "^h.*o$")
c = regex.replace("a1b22c333", "[0-9]+", "#")
d = regex.findall("a1b22c333", "[0-9]+")
e = regex.split("a,b;c", "[,;]")
f = regex.search("hello", "l+")
g = regex.compile("[a-z")
"##,
    ),
    (
        "module_json",
        r##"import json
d = {b = 1, a = [1, 2.5, None, True, "s"], c = {x = "y"}}
a = json.encode(d)
b = json.encode(d, indent = 2)
c = json.encode(d, sort_keys = True)
e = json.decode('{"z": 1, "a": [1, 2], "n": null}')
f = json.encode({a = None, b = 1}, ignore_private = True, ignore_none = True)
g = json.validate('{"a": 1}')
h = json.validate('{a: 1}')
"##,
    ),
    (
        "module_yaml",
        r##"import yaml
d = {b = 1, a = [1, "two"], c = {x = None}}
a = yaml.encode(d)
b = yaml.encode(d, sort_keys = True)
c = yaml.decode("a: 1\nb: [x, y]\nc: yes\n")
e = yaml.decode_all("a: 1\n---\nb: 2\n")
f = yaml.encode_all([{a = 1}, {b = 2}])
g = yaml.validate("a: [")
"##,
    ),
    (
        "module_base64_and_base32",
        r##"import base64
import base32
a = base64.encode("hello kcl")
b = base64.decode("aGVsbG8ga2Ns")
c = base32.encode("hello")
d = base32.decode("NBSWY3DP")
"##,
    ),
    (
        "module_math",
        r##"import math
a = [math.ceil(1.2), math.floor(1.8), math.factorial(5), math.gcd(12, 18)]
b = [math.sqrt(16), math.pow(2, 0.5), math.log(1), math.log10(1000), math.log2(8), math.exp(0)]
c = [math.isfinite(1.0), math.isinf(1.0), math.isnan(1.0), math.modf(3.5)]
d = [math.expm1(0)]
"##,
    ),
    (
        "module_datetime",
        r##"import datetime
a = datetime.validate("2024-02-29", "%Y-%m-%d")
b = datetime.validate("2023-02-29", "%Y-%m-%d")
c = typeof(datetime.now())
d = len(datetime.today()) > 0
e = typeof(datetime.ticks())
"##,
    ),
    (
        "module_crypto",
        r##"import crypto
a = crypto.md5("kcl")
b = crypto.sha1("kcl")
c = crypto.sha224("kcl")
d = crypto.sha256("kcl")
e = crypto.sha384("kcl")
f = crypto.sha512("kcl")
g = len(crypto.uuid())
"##,
    ),
    (
        "module_units",
        r##"import units
a = units.to_Ki(2048)
b = units.to_Mi(1048576 * 3)
c = units.to_K(1500)
d = units.to_Gi(1)
e = units.to_m(1)
f = units.to_n(1)
"##,
    ),
    (
        "module_net",
        r##"import net
a = net.split_host_port("example.com:80")
b = net.join_host_port("example.com", 80)
c = [net.is_IPv4("10.0.0.1"), net.is_IPv4("::1"), net.is_IP("::1"), net.is_IP("x")]
d = [net.is_loopback_IP("127.0.0.1"), net.is_multicast_IP("224.0.0.1"), net.is_unspecified_IP("0.0.0.0")]
e = [net.is_global_unicast_IP("8.8.8.8"), net.is_link_local_unicast_IP("169.254.0.1"), net.is_interface_local_multicast_IP("ff01::1")]
f = net.parse_IP("192.168.0.1")
g = net.IP_string("10.0.0.1")
h = [net.is_IP_in_CIDR("10.0.0.5", "10.0.0.0/24"), net.CIDR_subnet("10.0.0.0/16", 8, 1)] if False else True
"##,
    ),
    (
        "module_manifests_yaml_stream",
        r##"import manifests
a = {kind = "A"}
b = {kind = "B", items = [1, 2]}
manifests.yaml_stream([a, b])
"##,
    ),
    (
        "module_template",
        r##"import template
a = template.execute("hello {{name}}, {{#each items}}[{{this}}]{{/each}}", {name = "kcl", items = [1, 2]})
b = template.html_escape("<a href='x'>&</a>")
"##,
    ),
    (
        "module_runtime_catch",
        r##"import runtime
a = runtime.catch(lambda {
    assert False, "caught"
})
b = runtime.catch(lambda {
    1
})
"##,
    ),
    (
        "module_file_reads_below_the_work_dir",
        r##"import file
a = len(file.read("main.k")) > 0
b = file.exists("main.k")
c = file.exists("nothing.k")
d = file.read("missing.txt")
"##,
    ),
    (
        "module_not_found_unused",
        "import nosuchmodule\nimport a.b.c as x\na = 1\n",
    ),
    (
        "module_not_found",
        r##"import nosuchmodule
a = nosuchmodule.x
"##,
    ),
    // The static checks KCL makes before it evaluates.
    (
        "undefined_name",
        r##"a = b + 1
"##,
    ),
    (
        "unknown_attribute_of_a_schema",
        r##"schema S:
    a: int = 1
s = S {}
x = s.nothing
"##,
    ),
    (
        "builtin_wrong_argument_count",
        r##"a = len()
"##,
    ),
    (
        "unsupported_operand_types",
        r##"a = 1 + "s"
"##,
    ),
    (
        "syntax_error",
        r##"a = {
b = 1
"##,
    ),
    (
        "indentation_error",
        r##"schema S:
    a: int = 1
      b: int = 2
"##,
    ),
    (
        "conflicting_values_in_unification",
        r##"a = {x: 1, x: 2}
"##,
    ),
    (
        "schema_inherit_from_non_schema",
        r##"schema A(int):
    a: int
"##,
    ),
    (
        "typical_composition_program",
        r##"_params = option("params") or {}
_region = _params?.region or "us-east-1"
_names = ["alpha", "beta", "gamma"]

_bucket = lambda name: str, index: int -> {str:} {
    {
        apiVersion = "s3.aws.upbound.io/v1beta1"
        kind = "Bucket"
        metadata = {
            name = "bucket-${name}"
            annotations = {"krm.kcl.dev/composition-resource-name" = "bucket-${index}"}
            labels.index = str(index)
        }
        spec.forProvider = {
            region = _region
            tags = {"managed-by" = "plait", "index" = "${index}"}
        }
    }
}

items = [_bucket(n, i) for i, n in _names if n != "beta"] + [
    {apiVersion = "v1", kind = "ConfigMap", metadata.name = "summary", data = {count = str(len(_names))}}
]
"##,
    ),
];

/// Programs that also set `kcl run`'s flags.
fn flag_cases() -> Vec<Program> {
    let sample = r##"b = None
a = {z = 1, y = None, _h = 2}
_hidden = 1
c = [None, 1]
"##;
    let mut cases = Vec::new();
    for (name, sort_keys, disable_none, show_hidden) in [
        ("flag_sort_keys", true, false, false),
        ("flag_disable_none", false, true, false),
        ("flag_show_hidden", false, false, true),
        ("flag_all", true, true, true),
    ] {
        cases.push(Program {
            sort_keys,
            disable_none,
            show_hidden,
            ..Program::new(name, sample)
        });
    }
    let options = r##"a = option("s")
b = option("i", type = "int")
c = option("f")
d = option("l")
e = option("d")
f = option("t")
g = option("q")
"##;
    cases.push(Program {
        args: [
            ("s", "text"),
            ("i", "3"),
            ("f", "1.5"),
            ("l", "[1,2]"),
            ("d", r#"{"k":"v"}"#),
            ("t", "True"),
            ("q", r#""000123""#),
        ]
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect(),
        ..Program::new("flag_top_level_arguments", options)
    });
    let selected = r##"app = {metadata.name = "app", spec = {replicas = 2}}
other = {metadata.name = "other"}
items = [app, other]
"##;
    for (name, selectors) in [
        ("flag_path_selector_of_a_config", &["app"][..]),
        (
            "flag_path_selector_of_a_nested_value",
            &["app.spec.replicas"],
        ),
        ("flag_path_selector_of_a_list_of_configs", &["items"]),
        ("flag_path_selectors_of_two_configs", &["app", "other"]),
        (
            "flag_path_selectors_of_a_list_and_a_config",
            &["items", "app"],
        ),
        ("flag_path_selector_of_nothing", &["missing"]),
    ] {
        cases.push(Program {
            path_selectors: selectors.iter().map(|s| s.to_string()).collect(),
            ..Program::new(name, selected)
        });
    }
    for (name, source) in [
        ("flag_strict_range_check_add", "a = 2147483647 + 1\n"),
        ("flag_strict_range_check_sub", "a = 2147483647 - -1\n"),
        ("flag_strict_range_check_mul", "a = 65536 * 65536\n"),
        ("flag_strict_range_check_pow", "a = 2 ** 31\n"),
        ("flag_strict_range_check_shift", "a = 1 << 31\nb = a << 1\n"),
        ("flag_strict_range_check_operand", "a = 3000000000 + 0\n"),
        ("flag_strict_range_check_float", "a = 3e38 + 3e38\n"),
        ("flag_strict_range_check_int_and_float", "a = 2 * 2e38\n"),
        (
            "flag_strict_range_check_augmented",
            "_a = 2147483647\n_a += 1\nb = _a\n",
        ),
        (
            "flag_strict_range_check_within_range",
            "a = 2147483647 + 0\nb = 1.5 * 2.0\nc = 9223372036854775807 / 2\nd = 10 % 3\n",
        ),
    ] {
        cases.push(Program {
            strict_range_check: true,
            ..Program::new(name, source)
        });
    }
    cases.push(Program {
        args: vec![("i".to_string(), "x".to_string())],
        ..Program::new(
            "flag_top_level_argument_of_the_wrong_type",
            "b = option(\"i\", type = \"int\")\n",
        )
    });
    cases
}

/// The `kcl.mod` of a program depending on the package `ext` in
/// `vendor/ext`.
const APP_DEPENDING_ON_EXT: &str = "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n\
    [dependencies]\next = { path = \"./vendor/ext\" }\n";
const EXT_KCL_MOD: &str = "[package]\nname = \"ext\"\nversion = \"0.0.1\"\n";

/// Programs of several files: packages, relative imports, `kcl.mod` path
/// dependencies (handed to kcl-lib as `kcl run` hands them).
fn package_cases() -> Vec<Program> {
    let files = |files: &[(&str, &str)]| {
        files
            .iter()
            .map(|(path, text)| (path.to_string(), text.to_string()))
            .collect()
    };
    vec![
        Program {
            files: files(&[
                (
                    "kcl.mod",
                    "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\nhelper = { path = \"./vendor/helper\" }\n",
                ),
                (
                    "vendor/helper/kcl.mod",
                    "[package]\nname = \"helper\"\nversion = \"0.1.0\"\n",
                ),
                (
                    "vendor/helper/lib.k",
                    "greet = lambda name: str -> str { \"hello ${name}\" }\nschema Labels:\n    [str]: str\n",
                ),
                (
                    "pkg/person.k",
                    "schema Person:\n    name: str\n    age: int = 1\n",
                ),
                ("pkg/more.k", "default_age = 7\n"),
                ("pkg/_ignored.k", "this is not KCL\n"),
                ("sub/util.k", "double = lambda x { x * 2 }\n"),
            ]),
            ..Program::new(
                "packages_local_relative_and_path_dependency",
                r##"import pkg
import helper
import .sub.util as u
p = pkg.Person {name = "a", age = pkg.default_age}
g = helper.greet("kcl")
l = helper.Labels {a = "b"}
d = u.double(21)
"##,
            )
        },
        Program {
            files: files(&[
                ("kcl.mod", APP_DEPENDING_ON_EXT),
                ("vendor/ext/kcl.mod", EXT_KCL_MOD),
                ("vendor/ext/io/full/f.k", "y = 2\n"),
                ("vendor/ext/io/text/readme.md", "no KCL here\n"),
                ("local/text/readme.md", "no KCL here\n"),
            ]),
            ..Program::new(
                "packages_unresolved_modules_of_a_dependency_are_empty",
                r##"import ext.io.nope as n
import ext.nope
import ext.io.text
import ext.io.full as f
import local.text as t
a = f.y
"##,
            )
        },
        Program {
            files: files(&[
                ("kcl.mod", APP_DEPENDING_ON_EXT),
                ("vendor/ext/kcl.mod", EXT_KCL_MOD),
            ]),
            ..Program::new(
                "packages_unresolved_module_of_a_dependency_used",
                "import ext.io.nope as n\na = n.x\n",
            )
        },
        Program {
            files: files(&[
                ("kcl.mod", APP_DEPENDING_ON_EXT),
                ("vendor/ext/kcl.mod", EXT_KCL_MOD),
            ]),
            ..Program::new(
                "packages_unresolved_module_of_a_dependency_instantiated",
                "import ext.io.nope as n\na = n.T {}\n",
            )
        },
        Program {
            files: files(&[
                ("kcl.mod", APP_DEPENDING_ON_EXT),
                ("vendor/ext/kcl.mod", EXT_KCL_MOD),
            ]),
            ..Program::new(
                "packages_unresolved_module_of_a_dependency_used_by_its_last_name",
                "import ext.io.nope\nschema S:\n    v: nope.T\n",
            )
        },
        Program {
            files: files(&[
                ("kcl.mod", APP_DEPENDING_ON_EXT),
                ("vendor/ext/io/full/f.k", "y = 2\n"),
            ]),
            ..Program::new(
                "packages_dependency_without_kcl_mod_is_no_package",
                "import ext.io.full as f\na = f.y\n",
            )
        },
        Program {
            files: files(&[("kcl.mod", APP_DEPENDING_ON_EXT)]),
            ..Program::new(
                "packages_module_missing_under_the_root_unused",
                "import app.nosuch\nimport a.b.c as x\na = 1\n",
            )
        },
        Program {
            files: files(&[("a.k", "import b\nx = b.y\n"), ("b.k", "import a\ny = 1\n")]),
            ..Program::new("packages_import_cycle", "import a\nz = a.x\n")
        },
        Program {
            files: files(&[("pkg/p.k", "_hidden = 1\nshown = 2\n")]),
            ..Program::new(
                "packages_hidden_names_are_not_exported",
                "import pkg\na = pkg._hidden\n",
            )
        },
        Program {
            files: files(&[("data/config.yaml", "replicas: 3\nname: app\n")]),
            ..Program::new(
                "packages_file_module_reads_beside_the_program",
                r##"import file
import yaml
c = yaml.decode(file.read("data/config.yaml"))
e = file.exists("data/config.yaml")
"##,
            )
        },
    ]
}

#[test]
fn every_feature_runs_as_in_kcl() {
    let mut programs: Vec<Program> = CASES
        .iter()
        .map(|(name, source)| Program::new(*name, *source))
        .collect();
    programs.extend(flag_cases());
    programs.extend(package_cases());
    let (_, report) = compare(&programs, |_| true);
    let differing: Vec<&str> = report
        .lines()
        .filter_map(|line| line.strip_prefix("--- ")?.strip_suffix(" ---"))
        .collect();
    let known: Vec<&str> = KNOWN_DIFFERENCES.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        differing, known,
        "plait should differ from KCL on the known differences alone \
         (a fixed one leaves KNOWN_DIFFERENCES and docs/kcl.md):\n{report}"
    );
}

/// Programs of the table on which plait still differs from KCL 0.12.3, in
/// the table's order, with the difference (docs/kcl.md lists them too).
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    (
        "config_insert_extends_the_referenced_list",
        "KCL's `k = v0, k += [1]` extends the very list `v0` holds, so `v0` changes too \
         (0.13.2 as well); plait's values are copied on write and `v0` keeps its value",
    ),
    (
        "rule_failure",
        "a rule called as a function (`Positive()`) that fails: KCL reports its condition \
         alone, plait first the instance, as KCL does for `Positive {}`",
    ),
    (
        "lambda_return_type_checked",
        "a value of the wrong type returned by a lambda: KCL points at the lambda, plait at the call",
    ),
    (
        "syntax_error",
        "a config left open at the end of the file: KCL points two columns before plait, \
         and its API reports the error twice",
    ),
    (
        "packages_import_cycle",
        "an import cycle: KCL lists the cycle's files in another order and adds its checker's \
         'circular reference' errors",
    ),
];
