import plait_function as fn


def compose(req: fn.Request) -> fn.Response:
    resp = req.response()  # passes earlier steps through
    greeting = req.get("spec.greeting", "Hello")
    resp.set_resource("greeting", {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": {"greeting": greeting},
    })
    resp.set_ready("greeting", req.observed_resource("greeting") is not None)
    resp.set_composite_field("status.greeting", greeting)
    resp.normal(f"composed greeting {greeting!r}")
    return resp


WitWorld = fn.export(compose)
