package plait

import (
	"fmt"
	"slices"
	"sort"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// ToRunFunctionRequest turns plait's request into the request a gRPC
// function receives from Crossplane. Required resources fill both
// required_resources and the deprecated extra_resources, as Crossplane
// does, so functions reading either find them. Required schemas and the
// host's capabilities have no field in function-sdk-go v0.5.0's protocol
// and are not passed on.
func ToRunFunctionRequest(req *Request) (*fnv1.RunFunctionRequest, error) {
	observed, err := toState(&req.Observed)
	if err != nil {
		return nil, fmt.Errorf("observed state: %w", err)
	}
	desired, err := toState(&req.Desired)
	if err != nil {
		return nil, fmt.Errorf("desired state: %w", err)
	}
	out := &fnv1.RunFunctionRequest{
		Meta:     &fnv1.RequestMeta{Tag: req.Meta.Tag},
		Observed: observed,
		Desired:  desired,
	}
	if req.Input != nil {
		if out.Input, err = toStruct(*req.Input); err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
	}
	context := req.Context
	if context == "" {
		context = "{}"
	}
	if out.Context, err = toStruct(context); err != nil {
		return nil, fmt.Errorf("context: %w", err)
	}
	if len(req.RequiredResources) > 0 {
		out.RequiredResources = make(map[string]*fnv1.Resources, len(req.RequiredResources))
		out.ExtraResources = make(map[string]*fnv1.Resources, len(req.RequiredResources))
		for _, rr := range req.RequiredResources {
			items := make([]*fnv1.Resource, 0, len(rr.Items))
			for i, item := range rr.Items {
				s, err := toStruct(item)
				if err != nil {
					return nil, fmt.Errorf("required resources %q, item %d: %w", rr.Name, i, err)
				}
				items = append(items, &fnv1.Resource{Resource: s})
			}
			out.RequiredResources[rr.Name] = &fnv1.Resources{Items: items}
			out.ExtraResources[rr.Name] = &fnv1.Resources{Items: items}
		}
	}
	if len(req.Credentials) > 0 {
		out.Credentials = make(map[string]*fnv1.Credentials, len(req.Credentials))
		for _, c := range req.Credentials {
			out.Credentials[c.Name] = &fnv1.Credentials{Source: &fnv1.Credentials_CredentialData{
				CredentialData: &fnv1.CredentialData{Data: toDetails(c.Data)},
			}}
		}
	}
	return out, nil
}

func toStruct(text string) (*structpb.Struct, error) {
	s := &structpb.Struct{}
	if err := protojson.Unmarshal([]byte(text), s); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return s, nil
}

func toDetails(details []ConnectionDetail) map[string][]byte {
	if len(details) == 0 {
		return nil
	}
	out := make(map[string][]byte, len(details))
	for _, d := range details {
		out[d.Key] = d.Value
	}
	return out
}

func toResource(r *Resource) (*fnv1.Resource, error) {
	s, err := toStruct(r.JSON)
	if err != nil {
		return nil, err
	}
	return &fnv1.Resource{
		Resource:          s,
		ConnectionDetails: toDetails(r.ConnectionDetails),
		Ready:             fnv1.Ready(r.Ready),
	}, nil
}

func toState(s *State) (*fnv1.State, error) {
	out := &fnv1.State{}
	if s.Composite != nil {
		xr, err := toResource(s.Composite)
		if err != nil {
			return nil, fmt.Errorf("composite: %w", err)
		}
		out.Composite = xr
	}
	if len(s.Resources) > 0 {
		out.Resources = make(map[string]*fnv1.Resource, len(s.Resources))
		for _, cr := range s.Resources {
			r, err := toResource(&cr.Resource)
			if err != nil {
				return nil, fmt.Errorf("resource %q: %w", cr.Name, err)
			}
			out.Resources[cr.Name] = r
		}
	}
	return out, nil
}

// FromRunFunctionResponse turns a gRPC function's response into plait's.
// Maps become lists sorted by key, so equal responses encode equally. An
// absent context keeps the request's (Crossplane keeps the pipeline
// context when a step returns none); an absent tag echoes the request's.
func FromRunFunctionResponse(req *Request, rsp *fnv1.RunFunctionResponse) (*Response, error) {
	out := &Response{Tag: req.Meta.Tag, Context: req.Context}
	if out.Context == "" {
		out.Context = "{}"
	}
	if meta := rsp.GetMeta(); meta != nil {
		if meta.GetTag() != "" {
			out.Tag = meta.GetTag()
		}
		if ttl := meta.GetTtl(); ttl != nil {
			ms, err := ttlMillis(ttl)
			if err != nil {
				return nil, err
			}
			out.TTLMillis = &ms
		}
	}
	desired, err := fromState(rsp.GetDesired())
	if err != nil {
		return nil, fmt.Errorf("desired state: %w", err)
	}
	out.Desired = desired
	for _, r := range rsp.GetResults() {
		out.Results = append(out.Results, Result{
			Severity: fromSeverity(r.GetSeverity()),
			Message:  r.GetMessage(),
			Reason:   r.Reason,
			Target:   fromTarget(r.Target),
		})
	}
	if c := rsp.GetContext(); c != nil {
		if out.Context, err = fromStruct(c); err != nil {
			return nil, fmt.Errorf("context: %w", err)
		}
	}
	out.Requirements = fromRequirements(rsp.GetRequirements())
	for _, c := range rsp.GetConditions() {
		out.Conditions = append(out.Conditions, Condition{
			Type:    c.GetType(),
			Status:  fromStatus(c.GetStatus()),
			Reason:  c.GetReason(),
			Message: c.Message,
			Target:  fromTarget(c.Target),
		})
	}
	if o := rsp.GetOutput(); o != nil {
		text, err := fromStruct(o)
		if err != nil {
			return nil, fmt.Errorf("output: %w", err)
		}
		out.Output = &text
	}
	return out, nil
}

func ttlMillis(d *durationpb.Duration) (uint64, error) {
	if err := d.CheckValid(); err != nil {
		return 0, fmt.Errorf("ttl: %w", err)
	}
	ms := d.AsDuration().Milliseconds()
	if ms < 0 {
		return 0, fmt.Errorf("ttl %s is negative", d.AsDuration())
	}
	return uint64(ms), nil
}

func fromStruct(s *structpb.Struct) (string, error) {
	b, err := protojson.Marshal(s)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func fromDetails(details map[string][]byte) []ConnectionDetail {
	out := make([]ConnectionDetail, 0, len(details))
	for _, k := range sortedKeys(details) {
		out = append(out, ConnectionDetail{Key: k, Value: details[k]})
	}
	return out
}

func fromResource(r *fnv1.Resource) (Resource, error) {
	s := r.GetResource()
	if s == nil {
		s = &structpb.Struct{}
	}
	text, err := fromStruct(s)
	if err != nil {
		return Resource{}, err
	}
	return Resource{JSON: text, ConnectionDetails: fromDetails(r.GetConnectionDetails()), Ready: fromReady(r.GetReady())}, nil
}

func fromReady(r fnv1.Ready) Ready {
	switch r {
	case fnv1.Ready_READY_TRUE:
		return ReadyTrue
	case fnv1.Ready_READY_FALSE:
		return ReadyFalse
	default:
		return ReadyUnspecified
	}
}

func fromState(s *fnv1.State) (State, error) {
	var out State
	if s == nil {
		return out, nil
	}
	if xr := s.GetComposite(); xr != nil {
		r, err := fromResource(xr)
		if err != nil {
			return out, fmt.Errorf("composite: %w", err)
		}
		out.Composite = &r
	}
	for _, name := range sortedKeys(s.GetResources()) {
		r, err := fromResource(s.GetResources()[name])
		if err != nil {
			return out, fmt.Errorf("resource %q: %w", name, err)
		}
		out.Resources = append(out.Resources, ComposedResource{Name: name, Resource: r})
	}
	return out, nil
}

// fromSeverity maps SEVERITY_UNSPECIFIED to a warning: the result is shown,
// and it does not stop the pipeline.
func fromSeverity(s fnv1.Severity) Severity {
	switch s {
	case fnv1.Severity_SEVERITY_FATAL:
		return SeverityFatal
	case fnv1.Severity_SEVERITY_NORMAL:
		return SeverityNormal
	default:
		return SeverityWarning
	}
}

func fromTarget(t *fnv1.Target) *Target {
	if t == nil {
		return nil
	}
	var out Target
	switch *t {
	case fnv1.Target_TARGET_COMPOSITE:
		out = TargetComposite
	case fnv1.Target_TARGET_COMPOSITE_AND_CLAIM:
		out = TargetCompositeAndClaim
	default:
		return nil
	}
	return &out
}

func fromStatus(s fnv1.Status) ConditionStatus {
	switch s {
	case fnv1.Status_STATUS_CONDITION_TRUE:
		return ConditionTrue
	case fnv1.Status_STATUS_CONDITION_FALSE:
		return ConditionFalse
	default:
		return ConditionUnknown
	}
}

// fromRequirements merges the deprecated extra_resources with resources
// (resources wins on a name in both), as Crossplane does.
func fromRequirements(r *fnv1.Requirements) Requirements {
	var out Requirements
	selectors := map[string]*fnv1.ResourceSelector{}
	for name, s := range r.GetExtraResources() {
		selectors[name] = s
	}
	for name, s := range r.GetResources() {
		selectors[name] = s
	}
	for _, name := range sortedKeys(selectors) {
		s := selectors[name]
		sel := ResourceSelector{APIVersion: s.GetApiVersion(), Kind: s.GetKind(), Namespace: s.Namespace}
		if m, ok := s.GetMatch().(*fnv1.ResourceSelector_MatchName); ok {
			n := m.MatchName
			sel.MatchName = &n
		} else {
			labels := s.GetMatchLabels().GetLabels()
			sel.MatchLabels = make([][2]string, 0, len(labels))
			for _, k := range sortedKeys(labels) {
				sel.MatchLabels = append(sel.MatchLabels, [2]string{k, labels[k]})
			}
		}
		out.Resources = append(out.Resources, ResourceRequirement{Name: name, Selector: sel})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return slices.Clip(keys)
}
