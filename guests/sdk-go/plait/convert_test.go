package plait

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"
	"github.com/plait-dev/plait/guests/sdk-go/component"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

func ptrTo[T any](v T) *T { return &v }

// sameJSON compares two JSON texts by value.
func sameJSON(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s: got %s, want %s", what, got, want)
	}
}

func TestRequestCarriesEveryFieldTheProtocolHas(t *testing.T) {
	req := &Request{
		Meta: RequestMeta{Tag: "t1", Capabilities: []Capability{component.CapabilityConditions}},
		Observed: State{
			Composite: &Resource{
				JSON:              `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"a"},"spec":{"n":3}}`,
				ConnectionDetails: []ConnectionDetail{{Key: "k", Value: []byte("v")}},
				Ready:             ReadyTrue,
			},
			Resources: []ComposedResource{{Name: "cm", Resource: Resource{JSON: `{"kind":"ConfigMap"}`, Ready: ReadyFalse}}},
		},
		Desired:           State{Resources: []ComposedResource{{Name: "cm", Resource: Resource{JSON: `{"kind":"ConfigMap"}`}}}},
		Input:             ptrTo(`{"apiVersion":"in/v1","kind":"Input","x":"y"}`),
		Context:           `{"apiextensions.crossplane.io/environment":{"a":1}}`,
		RequiredResources: []RequiredResources{{Name: "defaults", Items: []string{`{"kind":"ConfigMap","data":{"a":"b"}}`}}},
		Credentials:       []Credentials{{Name: "creds", Data: []ConnectionDetail{{Key: "password", Value: []byte("s3cr3t")}}}},
	}
	got, err := ToRunFunctionRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetMeta().GetTag() != "t1" {
		t.Errorf("tag: %q", got.GetMeta().GetTag())
	}
	xr, err := request.GetObservedCompositeResource(got)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := xr.Resource.GetInteger("spec.n"); err != nil || n != 3 {
		t.Errorf("spec.n: %d, %v", n, err)
	}
	if string(xr.ConnectionDetails["k"]) != "v" {
		t.Errorf("connection details: %v", xr.ConnectionDetails)
	}
	if r := got.GetObserved().GetResources()["cm"].GetReady(); r != fnv1.Ready_READY_FALSE {
		t.Errorf("observed readiness: %v", r)
	}
	if got.GetObserved().GetComposite().GetReady() != fnv1.Ready_READY_TRUE {
		t.Errorf("composite readiness: %v", got.GetObserved().GetComposite().GetReady())
	}
	if _, ok := got.GetDesired().GetResources()["cm"]; !ok {
		t.Errorf("desired resources: %v", got.GetDesired().GetResources())
	}
	if got.GetDesired().GetComposite() != nil {
		t.Errorf("desired composite should be absent")
	}
	if v := got.GetInput().GetFields()["x"].GetStringValue(); v != "y" {
		t.Errorf("input: %v", got.GetInput())
	}
	if v, ok := request.GetContextKey(got, "apiextensions.crossplane.io/environment"); !ok || v.GetStructValue().GetFields()["a"].GetNumberValue() != 1 {
		t.Errorf("context: %v", got.GetContext())
	}
	for name, get := range map[string]func(*fnv1.RunFunctionRequest) (map[string][]resource.Required, error){
		"required": request.GetRequiredResources,
		"extra":    request.GetExtraResources,
	} {
		rr, err := get(got)
		if err != nil || len(rr["defaults"]) != 1 || rr["defaults"][0].Resource.GetKind() != "ConfigMap" {
			t.Errorf("%s resources: %v, %v", name, rr, err)
		}
	}
	creds, err := request.GetCredentials(got, "creds")
	if err != nil || string(creds.Data["password"]) != "s3cr3t" {
		t.Errorf("credentials: %v, %v", creds, err)
	}
}

func TestRequestsThatAreNotJSONObjectsAreInvalidInput(t *testing.T) {
	cases := map[string]struct {
		req  Request
		want string
	}{
		"composite is not JSON": {
			req:  Request{Observed: State{Composite: &Resource{JSON: "{"}}},
			want: "observed state: composite: not a JSON object",
		},
		"input is an array": {
			req:  Request{Input: ptrTo("[1]")},
			want: "input: not a JSON object",
		},
		"required item is not JSON": {
			req:  Request{RequiredResources: []RequiredResources{{Name: "x", Items: []string{"nope"}}}},
			want: `required resources "x", item 0: not a JSON object`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, failure := Handle(runnerFunc(func(*fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
				t.Fatal("the function must not run")
				return nil, nil
			}), &tc.req)
			if failure == nil || failure.Kind != ErrorInvalidInput || !strings.Contains(failure.Message, tc.want) {
				t.Errorf("got %+v, want invalid input containing %q", failure, tc.want)
			}
		})
	}
}

type runnerFunc func(*fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error)

func (f runnerFunc) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	return f(req)
}

func TestResponseCarriesEveryFieldTheProtocolHas(t *testing.T) {
	req := &Request{Meta: RequestMeta{Tag: "t1"}, Context: `{"keep":true}`}
	ns := "team-a"
	rsp := response.To(&fnv1.RunFunctionRequest{Meta: &fnv1.RequestMeta{Tag: "t1"}}, 90*time.Second)
	rsp.Desired = &fnv1.State{
		Composite: &fnv1.Resource{Resource: resource.MustStructJSON(`{"status":{"phase":"Bound"}}`)},
		Resources: map[string]*fnv1.Resource{
			"b": {Resource: resource.MustStructJSON(`{"kind":"B","spec":{"n":2}}`), Ready: fnv1.Ready_READY_TRUE,
				ConnectionDetails: map[string][]byte{"z": []byte("1"), "a": []byte("2")}},
			"a": {Resource: resource.MustStructJSON(`{"kind":"A"}`)},
		},
	}
	response.Normalf(rsp, "hello %d", 1).TargetCompositeAndClaim().WithReason("Greeting")
	response.Warning(rsp, errors.New("careful"))
	response.Fatal(rsp, errors.New("stop"))
	response.ConditionFalse(rsp, "VolumeBound", "Waiting").WithMessage("pending").TargetComposite()
	response.ConditionTrue(rsp, "Other", "Fine")
	rsp.Requirements = &fnv1.Requirements{
		ExtraResources: map[string]*fnv1.ResourceSelector{
			"old":  {ApiVersion: "v1", Kind: "Secret", Match: &fnv1.ResourceSelector_MatchName{MatchName: "s"}},
			"both": {ApiVersion: "v1", Kind: "Secret", Match: &fnv1.ResourceSelector_MatchName{MatchName: "loses"}},
		},
		Resources: map[string]*fnv1.ResourceSelector{
			"both": {ApiVersion: "v1", Kind: "ConfigMap", Namespace: &ns, Match: &fnv1.ResourceSelector_MatchLabels{
				MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{"z": "1", "a": "2"}}}},
		},
	}
	if err := response.SetOutput(rsp, map[string]any{"done": true}); err != nil {
		t.Fatal(err)
	}

	got, failure := Handle(runnerFunc(func(*fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) { return rsp, nil }), req)
	if failure != nil {
		t.Fatal(failure)
	}
	if got.Tag != "t1" || got.TTLMillis == nil || *got.TTLMillis != 90000 {
		t.Errorf("meta: %q, %v", got.Tag, got.TTLMillis)
	}
	sameJSON(t, "context", got.Context, `{"keep":true}`)
	sameJSON(t, "composite", got.Desired.Composite.JSON, `{"status":{"phase":"Bound"}}`)
	if len(got.Desired.Resources) != 2 || got.Desired.Resources[0].Name != "a" || got.Desired.Resources[1].Name != "b" {
		t.Fatalf("resources are sorted by name: %+v", got.Desired.Resources)
	}
	b := got.Desired.Resources[1].Resource
	sameJSON(t, "resource b", b.JSON, `{"kind":"B","spec":{"n":2}}`)
	if !strings.Contains(b.JSON, `"n":2`) && !strings.Contains(b.JSON, `"n": 2`) {
		t.Errorf("integers stay integers: %s", b.JSON)
	}
	if b.Ready != ReadyTrue || !reflect.DeepEqual(b.ConnectionDetails, []ConnectionDetail{{Key: "a", Value: []byte("2")}, {Key: "z", Value: []byte("1")}}) {
		t.Errorf("resource b: %+v", b)
	}
	wantResults := []Result{
		{Severity: SeverityNormal, Message: "hello 1", Reason: ptrTo("Greeting"), Target: ptrTo(TargetCompositeAndClaim)},
		{Severity: SeverityWarning, Message: "careful", Target: ptrTo(TargetComposite)},
		{Severity: SeverityFatal, Message: "stop", Target: ptrTo(TargetComposite)},
	}
	if !reflect.DeepEqual(got.Results, wantResults) {
		t.Errorf("results: %+v", got.Results)
	}
	wantConditions := []Condition{
		{Type: "VolumeBound", Status: ConditionFalse, Reason: "Waiting", Message: ptrTo("pending"), Target: ptrTo(TargetComposite)},
		{Type: "Other", Status: ConditionTrue, Reason: "Fine", Target: ptrTo(TargetComposite)},
	}
	if !reflect.DeepEqual(got.Conditions, wantConditions) {
		t.Errorf("conditions: %+v", got.Conditions)
	}
	wantRequirements := []ResourceRequirement{
		{Name: "both", Selector: ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Namespace: &ns, MatchLabels: [][2]string{{"a", "2"}, {"z", "1"}}}},
		{Name: "old", Selector: ResourceSelector{APIVersion: "v1", Kind: "Secret", MatchName: ptrTo("s")}},
	}
	if !reflect.DeepEqual(got.Requirements.Resources, wantRequirements) {
		t.Errorf("requirements: %+v", got.Requirements.Resources)
	}
	if got.Output == nil {
		t.Fatal("output missing")
	}
	sameJSON(t, "output", *got.Output, `{"done":true}`)
}

func TestResponseEdgeCases(t *testing.T) {
	req := &Request{Meta: RequestMeta{Tag: "req-tag"}, Context: `{"a":1}`}
	cases := map[string]struct {
		rsp   *fnv1.RunFunctionResponse
		check func(t *testing.T, got *Response)
	}{
		"an empty response echoes the tag and keeps the context": {
			rsp: &fnv1.RunFunctionResponse{},
			check: func(t *testing.T, got *Response) {
				if got.Tag != "req-tag" || got.TTLMillis != nil || got.Desired.Composite != nil {
					t.Errorf("%+v", got)
				}
				sameJSON(t, "context", got.Context, `{"a":1}`)
			},
		},
		"a returned context replaces the pipeline's": {
			rsp: &fnv1.RunFunctionResponse{Context: &structpb.Struct{Fields: map[string]*structpb.Value{"b": structpb.NewBoolValue(true)}}},
			check: func(t *testing.T, got *Response) {
				sameJSON(t, "context", got.Context, `{"b":true}`)
			},
		},
		"unspecified severity is a warning, unspecified status unknown": {
			rsp: &fnv1.RunFunctionResponse{
				Results:    []*fnv1.Result{{Message: "m"}},
				Conditions: []*fnv1.Condition{{Type: "T", Reason: "R"}},
			},
			check: func(t *testing.T, got *Response) {
				if got.Results[0].Severity != SeverityWarning || got.Results[0].Target != nil || got.Conditions[0].Status != ConditionUnknown {
					t.Errorf("%+v %+v", got.Results, got.Conditions)
				}
			},
		},
		"a zero TTL is kept": {
			rsp: &fnv1.RunFunctionResponse{Meta: &fnv1.ResponseMeta{Ttl: durationpb.New(0)}},
			check: func(t *testing.T, got *Response) {
				if got.TTLMillis == nil || *got.TTLMillis != 0 {
					t.Errorf("ttl: %v", got.TTLMillis)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, failure := Handle(runnerFunc(func(*fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) { return tc.rsp, nil }), req)
			if failure != nil {
				t.Fatal(failure)
			}
			tc.check(t, got)
		})
	}
}

func TestFailuresBecomeErrorsTheHostReports(t *testing.T) {
	cases := map[string]struct {
		fn   runnerFunc
		kind ErrorKind
		want string
	}{
		"an error from RunFunction": {
			fn:   func(*fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) { return nil, errors.New("boom") },
			kind: ErrorInternal, want: "boom",
		},
		"a panic": {
			fn:   func(*fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) { panic("oh no") },
			kind: ErrorInternal, want: "function panicked: oh no",
		},
		"no response and no error": {
			fn:   func(*fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) { return nil, nil },
			kind: ErrorInternal, want: "neither a response nor an error",
		},
		"a negative TTL": {
			fn: func(*fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
				return &fnv1.RunFunctionResponse{Meta: &fnv1.ResponseMeta{Ttl: durationpb.New(-time.Second)}}, nil
			},
			kind: ErrorInternal, want: "ttl -1s is negative",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, failure := Handle(tc.fn, &Request{})
			if got != nil || failure == nil || failure.Kind != tc.kind || !strings.Contains(failure.Message, tc.want) {
				t.Errorf("got %+v, %+v; want kind %d with %q", got, failure, tc.kind, tc.want)
			}
		})
	}
}

func TestLogLinesCarryKeyValuePairs(t *testing.T) {
	cases := map[string]struct {
		msg  string
		kv   []any
		want string
	}{
		"message only":   {msg: "hi", want: "hi"},
		"pairs":          {msg: "composed", kv: []any{"xr", "a", "n", 2}, want: "composed xr=a n=2"},
		"a dangling key": {msg: "m", kv: []any{"k"}, want: "m k=(missing)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := FormatLine(tc.msg, tc.kv); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
