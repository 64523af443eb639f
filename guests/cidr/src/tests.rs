//! Upstream's unit-test cases (function-cidr v0.7.0 `fn_test.go`) and its
//! examples (`examples/xr-*.yaml` through `apis/composition.yaml`'s input),
//! each one row: the input, the XR, the context and desired XR, and the
//! desired XR or the fatal message upstream answers with.

use super::*;
use plait_sdk::{Resource, Severity, State};
use serde_json::json;

struct Case {
    name: &'static str,
    input: Value,
    observed: Option<Value>,
    desired: Option<Value>,
    context: Value,
    want: Result<Value, &'static str>,
}

/// The input `apis/composition.yaml` gives every example XR.
fn example_composition_input() -> Value {
    json!({
        "cidrFuncField": "spec.parameters.cidrFunc",
        "prefixField": "spec.parameters.cidrBlock",
        "newBitsField": "spec.parameters.newBits",
        "netNumItemsField": "spec.parameters.azs",
        "hostNumField": "spec.parameters.hostNum",
        "offsetField": "spec.parameters.offset",
        "multiPrefixField": "spec.parameters.subnets",
    })
}

fn xcidr(parameters: Value) -> Value {
    json!({"apiVersion": "platform.upbound.io/v1alpha1", "kind": "XCIDR", "metadata": {"name": "example"}, "spec": {"parameters": parameters}})
}

fn example(parameters: Value, cidr: Value) -> Case {
    let xr = xcidr(parameters);
    Case {
        name: "example",
        input: example_composition_input(),
        observed: Some(xr.clone()),
        desired: None,
        context: json!({}),
        want: Ok(
            json!({"apiVersion": xr["apiVersion"], "kind": xr["kind"], "status": {"atFunction": {"cidr": cidr}}}),
        ),
    }
}

fn unit(name: &'static str, input: Value, want: Value) -> Case {
    Case {
        name,
        input,
        observed: None,
        desired: None,
        context: json!({}),
        want: Ok(json!({"apiVersion": "", "kind": "", "status": {"atFunction": {"cidr": want}}})),
    }
}

fn refused(name: &'static str, input: Value, observed: Value, message: &'static str) -> Case {
    Case {
        name,
        input,
        observed: Some(observed),
        desired: None,
        context: json!({}),
        want: Err(message),
    }
}

fn cases() -> Vec<Case> {
    let extra = json!({"apiextensions.crossplane.io/extra-resources": {"XCluster": [
        {"apiVersion": "example.crossplane.io/v1", "kind": "XCluster", "spec": {"cidrBlock": "10.0.0.0/20"}}]}});
    vec![
        unit(
            "cidr-host",
            json!({"cidrFunc": "cidrhost", "prefix": "127.0.0.0/24", "hostNum": 111}),
            json!("127.0.0.111"),
        ),
        unit(
            "cidr-subnet",
            json!({"cidrFunc": "cidrsubnet", "prefix": "127.0.0.0/24", "newBits": [8], "netNum": 3}),
            json!("127.0.0.3/32"),
        ),
        unit(
            "cidr-netmask",
            json!({"cidrFunc": "cidrnetmask", "prefix": "127.0.0.0/24"}),
            json!("255.255.255.0"),
        ),
        unit(
            "cidr-subnets",
            json!({"cidrFunc": "cidrsubnets", "prefix": "127.0.0.0/24", "newBits": [8, 4, 2], "netNum": 3}),
            json!(["127.0.0.0/32", "127.0.0.16/28", "127.0.0.64/26"]),
        ),
        unit(
            "cidr-subnetloop",
            json!({"cidrFunc": "cidrsubnetloop", "prefix": "10.0.0.0/24", "newBits": [8], "netNumCount": 3, "offset": 48}),
            json!(["10.0.0.48/32", "10.0.0.49/32", "10.0.0.50/32"]),
        ),
        unit(
            "multi-prefix-loop",
            json!({"cidrFunc": "multiprefixloop", "multiPrefix": [
                {"prefix": "10.10.0.0/24", "newBits": [8, 4, 2]},
                {"prefix": "10.12.0.0/24", "newBits": [4, 4, 4]}]}),
            json!({"10.10.0.0/24": ["10.10.0.0/32", "10.10.0.16/28", "10.10.0.64/26"],
                   "10.12.0.0/24": ["10.12.0.0/28", "10.12.0.16/28", "10.12.0.32/28"]}),
        ),
        unit(
            "multi-prefix-loop-offset",
            json!({"cidrFunc": "multiprefixloop", "multiPrefix": [{"prefix": "10.10.0.0/24", "newBits": [2, 2], "offset": 2}]}),
            json!({"10.10.0.0/24": ["10.10.0.64/26", "10.10.0.128/26"]}),
        ),
        Case {
            name: "cidr-subnets-from-context",
            input: json!({"cidrFunc": "cidrsubnets",
                "prefixField": "context.apiextensions\\.crossplane\\.io/extra-resources.XCluster.0.spec.cidrBlock",
                "newBits": [1, 1], "outputField": "status.atFunction.cidr.partitions"}),
            observed: None,
            desired: None,
            context: extra.clone(),
            want: Ok(
                json!({"apiVersion": "", "kind": "", "status": {"atFunction": {"cidr": {"partitions": ["10.0.0.0/21", "10.0.8.0/21"]}}}}),
            ),
        },
        Case {
            name: "cidr-subnets-from-desired",
            input: json!({"cidrFunc": "cidrsubnets",
                "prefixField": "desired.composite.resource.status.atFunction.cidr.partitions[0]",
                "newBits": [1, 1], "outputField": "status.atFunction.cidr.private.subnets"}),
            observed: None,
            desired: Some(
                json!({"apiVersion": "platform.upbound.io/v1alpha1", "kind": "XCIDR",
                "status": {"atFunction": {"cidr": {"partitions": ["10.0.0.0/21"]}}}}),
            ),
            context: json!({}),
            want: Ok(
                json!({"apiVersion": "", "kind": "", "status": {"atFunction": {"cidr": {
                "private": {"subnets": ["10.0.0.0/22", "10.0.4.0/22"]}, "partitions": ["10.0.0.0/21"]}}}}),
            ),
        },
        example(
            json!({"cidrFunc": "cidrhost", "cidrBlock": "10.0.0.0/20", "hostNum": 111}),
            json!("10.0.0.111"),
        ),
        example(
            json!({"cidrFunc": "cidrnetmask", "cidrBlock": "172.16.0.0/12"}),
            json!("255.240.0.0"),
        ),
        // The example composition names no netNumField, so the XR's netNum is not read.
        example(
            json!({"cidrFunc": "cidrsubnet", "cidrBlock": "10.0.0.0/20", "newBits": [8], "netNum": 3}),
            json!("10.0.0.0/28"),
        ),
        example(
            json!({"cidrFunc": "cidrsubnets", "cidrBlock": "10.0.0.0/20", "newBits": [8, 4, 2]}),
            json!(["10.0.0.0/28", "10.0.1.0/24", "10.0.4.0/22"]),
        ),
        example(
            json!({"cidrFunc": "cidrsubnetloop", "cidrBlock": "10.0.0.0/24", "newBits": [8], "azs": ["us-west-1", "us-west-2", "us-west-3"], "offset": 48}),
            json!(["10.0.0.48/32", "10.0.0.49/32", "10.0.0.50/32"]),
        ),
        example(
            json!({"cidrFunc": "multiprefixloop", "subnets": [
                {"prefix": "10.0.0.0/20", "newBits": [8, 4, 2]},
                {"prefix": "127.0.0.0/20", "newBits": [4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5]}]}),
            json!({
                "10.0.0.0/20": ["10.0.0.0/28", "10.0.1.0/24", "10.0.4.0/22"],
                "127.0.0.0/20": ["127.0.0.0/24", "127.0.1.0/24", "127.0.2.0/24", "127.0.3.0/24", "127.0.4.0/24", "127.0.5.0/24",
                    "127.0.6.0/25", "127.0.6.128/25", "127.0.7.0/25", "127.0.7.128/25", "127.0.8.0/25", "127.0.8.128/25"],
            }),
        ),
        refused(
            "no cidrFunc",
            json!({"prefix": "10.0.0.0/8"}),
            xcidr(json!({})),
            "invalid Function input: parameters: Required value: cidrFunc is required",
        ),
        refused(
            "no prefix",
            json!({"cidrFunc": "cidrnetmask"}),
            xcidr(json!({})),
            "invalid Function input: parameters: Required value: either prefix or prefixField function input is required",
        ),
        refused(
            "prefix and prefixField",
            json!({"cidrFunc": "cidrnetmask", "prefix": "10.0.0.0/8", "prefixField": "spec.parameters.cidrBlock"}),
            xcidr(json!({})),
            "invalid Function input: parameters: Required value: specify only one of prefix or prefixField to avoid ambiguous function input",
        ),
        refused(
            "missing prefixField",
            json!({"cidrFunc": "cidrnetmask", "prefixField": "spec.parameters.cidrBlock"}),
            xcidr(json!({})),
            "invalid Function input: parameters: Required value: cannot get prefix at prefixField spec.parameters.cidrBlock: cannot get prefix from field spec.parameters.cidrBlock for XCIDR: spec.parameters.cidrBlock: no such field",
        ),
        refused(
            "invalid prefix",
            json!({"cidrFunc": "cidrnetmask", "prefix": "10.0.0.0/33"}),
            xcidr(json!({})),
            "invalid Function input: parameters: Required value: invalid CIDR prefix address 10.0.0.0/33",
        ),
        refused(
            "unexpected cidrFunc",
            json!({"cidrFunc": "cidrrange", "prefix": "10.0.0.0/8"}),
            xcidr(json!({})),
            "invalid Function input: parameters: Required value: unexpected cidrFunc cidrrange",
        ),
        refused(
            "cidrsubnet with two newBits",
            json!({"cidrFunc": "cidrsubnet", "prefix": "10.0.0.0/8", "newBits": [1, 2]}),
            xcidr(json!({})),
            "invalid Function input: parameters: Required value: cidrFunc cidrsubnet requires exactly 1 parameter in the array",
        ),
        refused(
            "cidrhost without a host number",
            json!({"cidrFunc": "cidrhost", "prefix": "10.0.0.0/8"}),
            xcidr(json!({})),
            "invalid Function input: parameters: Required value: either hostnum or hostnumfield function input is required",
        ),
        refused(
            "cidrsubnetloop with counts and items",
            json!({"cidrFunc": "cidrsubnetloop", "prefix": "10.0.0.0/8", "newBits": [8], "netNumCount": 2, "netNumItems": ["a"]}),
            xcidr(json!({})),
            "invalid Function input: parameters: Required value: cidrFunc cidrsubnetloop requires either one of netnumitems or netnumitemsfield, or mutually exclusive one of netnumcount or netnumcountfield, but not both counts and items",
        ),
        refused(
            "multiprefixloop with an invalid prefix",
            json!({"cidrFunc": "multiprefixloop", "multiPrefix": [{"prefix": "10.0.0/8", "newBits": [1]}]}),
            xcidr(json!({})),
            "invalid Function input: parameters: Required value: invalid CIDR prefix address 10.0.0/8",
        ),
        refused(
            "host number beyond the prefix",
            json!({"cidrFunc": "cidrhost", "prefix": "10.0.0.0/30", "hostNum": 4}),
            xcidr(json!({})),
            "cannot calculate CIDR host number for XCIDR: prefix of 30 does not accommodate a host numbered 4",
        ),
        refused(
            "subnets beyond the prefix",
            json!({"cidrFunc": "cidrsubnets", "prefix": "10.0.0.0/24", "newBits": [1, 1, 1]}),
            xcidr(json!({})),
            "cannot calculate Subnet CIDRs for XCIDR: not enough remaining address space for a subnet with a prefix of 25 bits after 10.0.0.128/25",
        ),
        refused(
            "newBitsField that is not a list of numbers",
            json!({"cidrFunc": "cidrsubnet", "prefix": "10.0.0.0/8", "newBitsField": "spec.parameters.newBits"}),
            xcidr(json!({"newBits": "eight"})),
            "cannot get newbits from field spec.parameters.newBits of XCIDR: json: cannot unmarshal string into Go value of type []int",
        ),
        refused(
            "unknown input field",
            json!({"cidrFunc": "cidrnetmask", "prefix": "10.0.0.0/8", "hostnum": 3}),
            xcidr(json!({})),
            "cannot get Function input: cannot get function input *v1beta1.Parameters from *v1.RunFunctionRequest: cannot unmarshal JSON from *structpb.Struct into *v1beta1.Parameters: json: cannot unmarshal Go value of type v1beta1.Parameters: unknown name \"hostnum\"",
        ),
    ]
}

fn request(case: &Case) -> Request {
    let mut input = case.input.clone();
    input["apiVersion"] = "cidr.fn.crossplane.io/v1beta1".into();
    input["kind"] = "Parameters".into();
    Request {
        input: Some(input),
        observed: State {
            composite: case.observed.clone().map(Resource::new),
            ..State::default()
        },
        desired: State {
            composite: case.desired.clone().map(Resource::new),
            ..State::default()
        },
        context: case.context.clone(),
        ..Request::default()
    }
}

#[test]
fn computes_as_upstream_does() {
    for case in cases() {
        let response = Cidr::run(request(&case)).unwrap();
        assert_eq!(response.ttl, Some(DEFAULT_TTL), "{}", case.name);
        match case.want {
            Ok(want) => {
                assert!(
                    response.results.is_empty(),
                    "{}: {:?}",
                    case.name,
                    response.results
                );
                let got = response.desired.composite.map(|c| c.resource);
                assert_eq!(got, Some(want), "{}", case.name);
            }
            Err(message) => {
                let results: Vec<(Severity, &str)> = response
                    .results
                    .iter()
                    .map(|r| (r.severity, r.message.as_str()))
                    .collect();
                assert_eq!(results, [(Severity::Fatal, message)], "{}", case.name);
                assert_eq!(
                    response.desired.composite, None,
                    "{}: desired XR untouched",
                    case.name
                );
            }
        }
    }
}
