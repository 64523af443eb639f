#!/usr/bin/env bash
# The getting-started example composed by the real controller (`make demo`):
# `plait dev up` starts a local control plane and the controller; the XRD,
# the Composition and the XR are applied to its API server; the XR becomes
# Ready; `plait trace` shows it; a composed object is edited and the
# controller puts it back; `plait dev down` stops everything. The API server
# is reached with curl and the kubeconfig's token, so kubectl is not needed.
set -euo pipefail

PLAIT=${PLAIT:-target/release/plait}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state=$(mktemp -d)
log=$state/dev.log
: >"$log"

stop() {
    "$PLAIT" dev down --state-dir "$state" >/dev/null || true
    rm -rf "$state"
}
trap stop EXIT

step() { printf '\n== %s\n' "$*"; }

# Polls `$@` once a second until it succeeds, for at most $timeout seconds.
eventually() {
    local what=$1 timeout=$2
    shift 2
    for _ in $(seq "$timeout"); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 1
    done
    echo "timed out after ${timeout}s waiting for: $what" >&2
    tail -n 30 "$log" >&2
    return 1
}

step "plait dev up: etcd, kube-apiserver and the controller on 127.0.0.1"
# A short poll interval so that the drift below is seen at once whatever happens to the watch.
"$PLAIT" dev up --state-dir "$state" --poll-interval 5s --probe-address 127.0.0.1:0 >"$log" 2>&1 &
up=$!
# The first run builds the control plane's binaries from their Go modules.
for _ in $(seq 3600); do
    grep -q '^KUBECONFIG=' "$log" && break
    kill -0 "$up" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 1
done
grep '^API server:\|^KUBECONFIG=' "$log"
kubeconfig=$state/kubeconfig
server=$(sed -n 's/^API server: //p' "$log")
token=$(sed -n 's/^ *token: *//p' "$kubeconfig")
ca=$(sed -n 's/^ *certificate-authority: *//p' "$kubeconfig")

api() {
    local method=$1 path=$2
    shift 2
    curl -sS --fail --cacert "$ca" -H "Authorization: Bearer $token" -X "$method" "$server$path" "$@"
}
apply() {
    api PATCH "$1?fieldManager=plait-demo&force=true" \
        -H 'Content-Type: application/apply-patch+yaml' --data-binary @- >/dev/null
}
json() { python3 -c "import json, sys
d = json.load(sys.stdin)
$1"; }

step "applying examples/getting-started: the XRD, the Composition, the XR"
eventually "the controller to install plait's CRDs" 300 \
    api GET /apis/apiextensions.crossplane.io/v2/compositeresourcedefinitions
apply /apis/apiextensions.crossplane.io/v2/compositeresourcedefinitions/apps.example.org <"$here/xrd.yaml"
apply /apis/apiextensions.crossplane.io/v1/compositions/app <"$here/composition.yaml"
eventually "the App kind to be served" 120 api GET /apis/example.org/v1alpha1/namespaces/default/apps
# The example's uid is for offline renders; the API server assigns its own.
grep -v '^  uid:' "$here/xr.yaml" | apply /apis/example.org/v1alpha1/namespaces/default/apps/hello

deployments=/apis/apps/v1/namespaces/default/deployments
composed_deployment() {
    api GET "$deployments?labelSelector=crossplane.io/composite%3Dhello" |
        json 'print(d["items"][0]["metadata"]["name"])'
}
eventually "the controller to compose the Deployment" 120 composed_deployment
deployment=$(composed_deployment)

# This control plane runs no nodes, so no pod ever starts: the Deployment is
# reported Available as the deployment controller would once its pod runs.
api PATCH "$deployments/$deployment/status" -H 'Content-Type: application/merge-patch+json' \
    --data '{"status":{"replicas":1,"readyReplicas":1,"availableReplicas":1,"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"no nodes: reported by the demo"}]}}' \
    >/dev/null
xr_ready() {
    api GET /apis/example.org/v1alpha1/namespaces/default/apps/hello |
        json 'c = [x for x in d["status"]["conditions"] if x["type"] == "Ready"]; sys.exit(0 if c and c[0]["status"] == "True" else 1)'
}
eventually "the App hello to be Ready" 120 xr_ready
echo "the App hello is Ready"

step "plait trace app hello"
"$PLAIT" trace app hello --kubeconfig "$kubeconfig"

step "the composed objects, as the API server stored them"
for path in "$deployments/$deployment" \
    "/api/v1/namespaces/default/services?labelSelector=crossplane.io/composite%3Dhello"; do
    # Without managedFields, which only say who wrote which field.
    api GET "$path" | json '
for o in d.get("items", [d]):
    o["metadata"].pop("managedFields", None)
    print(json.dumps(o, indent=2))'
done

step "drift: someone edits the Deployment's image; the controller puts it back"
image() { api GET "$deployments/$deployment" | json 'print(d["spec"]["template"]["spec"]["containers"][0]["image"])'; }
echo "before: $(image)"
# The API server's answer to the edit is the object as stored with it; the
# controller may put it back before another read would see it.
edited=$(api PATCH "$deployments/$deployment" -H 'Content-Type: application/strategic-merge-patch+json' \
    --data '{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"ghcr.io/example/edited:0.0.1"}]}}}}' |
    json 'print(d["spec"]["template"]["spec"]["containers"][0]["image"])')
echo "edited: $edited"
started=$(date +%s)
restored() { [ "$(image)" = "ghcr.io/example/hello:1.4.2" ]; }
eventually "the controller to restore the image" 60 restored
echo "after $(($(date +%s) - started))s: $(image)"

step "plait dev down"
"$PLAIT" dev down --state-dir "$state"
wait "$up" || true
grep "^plait dev:" "$log" | tail -n 1
