package main

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

// Objects and documents shared by the tests, after upstream's fn_test.go.
const (
	xrJSON     = `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"cool-xr"},"spec":{"count":2}}`
	cdJSON     = `{"apiVersion":"example.org/v1","kind":"CD","metadata":{"annotations":{"gotemplating.fn.crossplane.io/composition-resource-name":"cool-cd"},"name":"cool-cd"}}`
	cdTemplate = `{"apiVersion":"example.org/v1","kind":"CD","metadata":{"annotations":{"gotemplating.fn.crossplane.io/composition-resource-name":"cool-cd"},"name":"cool-cd","labels":{"belongsTo":{{.observed.composite.resource.metadata.name|quote}}}}}`
	cdRendered = `{"apiVersion":"example.org/v1","kind":"CD","metadata":{"annotations":{},"name":"cool-cd","labels":{"belongsTo":"cool-xr"}}}`

	metaDoc = `{"apiVersion":"meta.gotemplating.fn.crossplane.io/v1alpha1",`
)

// inline is a GoTemplate input with an inline template and extra fields.
func inline(tmpl string, extra map[string]any) *string {
	in := map[string]any{
		"apiVersion": "gotemplating.fn.crossplane.io/v1beta1",
		"kind":       "GoTemplate",
		"source":     "Inline",
		"inline":     map[string]any{"template": tmpl},
	}
	for k, v := range extra {
		in[k] = v
	}
	return input(in)
}

func input(in map[string]any) *string {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	s := string(b)
	return &s
}

func resource(text string) *component.Resource {
	return &component.Resource{JSON: text}
}

// withXR is a request whose observed and desired composite is xrJSON.
func withXR(in *string) *component.Request {
	return &component.Request{
		Input:    in,
		Observed: component.State{Composite: resource(xrJSON)},
		Desired:  component.State{Composite: resource(xrJSON)},
	}
}

func ptr[T any](v T) *T { return &v }

var ttl = uint64(60_000)

// response is the response upstream gives: the tag echoed, one minute's
// TTL, the given desired state and context.
func response(desired component.State, context string) *component.Response {
	return &component.Response{TTLMillis: ptr(ttl), Desired: desired, Context: context}
}

func fatalResponse(desired component.State, context, msg string) *component.Response {
	rsp := response(desired, context)
	rsp.Results = []component.Result{{Severity: component.SeverityFatal, Message: msg, Target: ptr(component.TargetComposite)}}
	return rsp
}

func xrState() component.State {
	return component.State{Composite: resource(xrJSON)}
}

// run calls the function and fails the test on an error return.
func run(t *testing.T, req *component.Request) *component.Response {
	t.Helper()
	rsp, failure := runFunction(req)
	if failure != nil {
		t.Fatalf("runFunction returned error %v", failure)
	}
	return rsp
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Errorf("%s: got invalid JSON %q: %v", what, got, err)
		return
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want invalid JSON %q: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

func sameResource(t *testing.T, what string, got, want *component.Resource) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Errorf("%s: got %+v, want %+v", what, got, want)
		return
	}
	if got == nil {
		return
	}
	sameJSON(t, what, got.JSON, want.JSON)
	if got.Ready != want.Ready {
		t.Errorf("%s: ready %v, want %v", what, got.Ready, want.Ready)
	}
	if len(got.ConnectionDetails)+len(want.ConnectionDetails) > 0 && !reflect.DeepEqual(got.ConnectionDetails, want.ConnectionDetails) {
		t.Errorf("%s: connection details %+v, want %+v", what, got.ConnectionDetails, want.ConnectionDetails)
	}
}

// sameResponse compares responses, JSON texts by value.
func sameResponse(t *testing.T, got, want *component.Response) {
	t.Helper()
	if got.Tag != want.Tag {
		t.Errorf("tag %q, want %q", got.Tag, want.Tag)
	}
	if !reflect.DeepEqual(got.TTLMillis, want.TTLMillis) {
		t.Errorf("ttl %v, want %v", got.TTLMillis, want.TTLMillis)
	}
	sameResource(t, "desired composite", got.Desired.Composite, want.Desired.Composite)
	if len(got.Desired.Resources) != len(want.Desired.Resources) {
		t.Errorf("desired resources %+v, want %+v", got.Desired.Resources, want.Desired.Resources)
	} else {
		for i := range want.Desired.Resources {
			if got.Desired.Resources[i].Name != want.Desired.Resources[i].Name {
				t.Errorf("desired resource %d is %q, want %q", i, got.Desired.Resources[i].Name, want.Desired.Resources[i].Name)
				continue
			}
			sameResource(t, "desired resource "+want.Desired.Resources[i].Name, &got.Desired.Resources[i].Resource, &want.Desired.Resources[i].Resource)
		}
	}
	if len(got.Results)+len(want.Results) > 0 && !reflect.DeepEqual(got.Results, want.Results) {
		t.Errorf("results:\n got %s\nwant %s", show(got.Results), show(want.Results))
	}
	sameJSON(t, "context", got.Context, want.Context)
	if len(got.Requirements.Resources)+len(want.Requirements.Resources) > 0 && !reflect.DeepEqual(got.Requirements, want.Requirements) {
		t.Errorf("requirements:\n got %s\nwant %s", show(got.Requirements), show(want.Requirements))
	}
	if len(got.Conditions)+len(want.Conditions) > 0 && !reflect.DeepEqual(got.Conditions, want.Conditions) {
		t.Errorf("conditions:\n got %s\nwant %s", show(got.Conditions), show(want.Conditions))
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// renderOne runs tmpl against req and returns the one desired composed
// resource it renders, or fails.
func renderOne(t *testing.T, req *component.Request) string {
	t.Helper()
	rsp := run(t, req)
	if len(rsp.Results) > 0 {
		t.Fatalf("unexpected results: %s", show(rsp.Results))
	}
	if len(rsp.Desired.Resources) != 1 {
		t.Fatalf("want one desired resource, got %s", show(rsp.Desired.Resources))
	}
	return rsp.Desired.Resources[0].Resource.JSON
}

// configMap is a ConfigMap template named cm with the given data lines.
func configMap(data ...string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    gotemplating.fn.crossplane.io/composition-resource-name: cm\ndata:\n  " + strings.Join(data, "\n  ") + "\n"
}

// dataOf returns the data field of a rendered ConfigMap.
func dataOf(t *testing.T, obj string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(obj), &m); err != nil {
		t.Fatal(err)
	}
	d, _ := m["data"].(map[string]any)
	return d
}

// TestMain silences the function's debug log (stderr when not under
// wasip1) unless GO_TEMPLATING_TEST_LOG is set.
func TestMain(m *testing.M) {
	if os.Getenv("GO_TEMPLATING_TEST_LOG") == "" {
		if devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
			os.Stderr = devNull
		}
	}
	os.Exit(m.Run())
}
