"""A tenant: a Namespace with a ResourceQuota, a LimitRange and one
RoleBinding per team. The XR is ready when the Namespace is Active and the
rest exists."""

import plait_function as fn

ROLES = {"admin": "admin", "developer": "edit", "viewer": "view"}


def compose(req: fn.Request) -> fn.Response:
    resp = req.response()
    tenant = req.get("metadata.name")
    namespace = req.get("spec.namespace", f"tenant-{tenant}")
    teams = req.get("spec.teams", [])
    if not teams:
        resp.warning("spec.teams is empty: nobody can use the namespace", reason="NoTeams")

    resp.set_resource("namespace", {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {"example.org/tenant": tenant}},
    })
    resp.set_resource("quota", {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "tenant-quota", "namespace": namespace},
        "spec": {"hard": {
            "requests.cpu": req.get("spec.quota.cpu", "4"),
            "requests.memory": req.get("spec.quota.memory", "8Gi"),
            "pods": str(req.get("spec.quota.pods", 20)),
        }},
    })
    resp.set_resource("limits", {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "tenant-limits", "namespace": namespace},
        "spec": {"limits": [{
            "type": "Container",
            "default": {"cpu": "500m", "memory": "512Mi"},
            "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
        }]},
    })
    for team in teams:
        name, role = team["name"], team.get("role", "developer")
        if role not in ROLES:
            raise fn.InvalidInput(
                f"spec.teams[{name}].role: {role!r} is not one of {', '.join(sorted(ROLES))}")
        resp.set_resource(f"rolebinding-{name}", {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": f"team-{name}", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": ROLES[role]},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                          "name": team.get("group", name)}],
        })

    for name in resp.desired:
        if name == "namespace":
            phase = req.observed_field("namespace", "status.phase")
            resp.set_ready(name, phase == "Active")
        else:
            resp.set_ready(name, req.observed_resource(name) is not None)
    resp.set_composite_field("status.namespace", namespace)
    resp.set_composite_field("status.teams", sorted(t["name"] for t in teams))
    return resp


WitWorld = fn.export(compose)
