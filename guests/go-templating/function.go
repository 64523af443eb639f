package main

// One call of the function, in upstream's order: read the input, find and
// parse the templates, render them with the request as data, then turn
// each rendered object into desired state, context, conditions or
// requirements. A failure is a fatal result; the response then carries
// what upstream's would: the request's desired state, the context and
// conditions as far as they got.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"

	"dario.cat/mergo"
	"github.com/plait-dev/plait/guests/sdk-go/component"
)

const (
	annotationResourceName = "gotemplating.fn.crossplane.io/composition-resource-name"
	annotationReady        = "gotemplating.fn.crossplane.io/ready"

	metaAPIVersion = "meta.gotemplating.fn.crossplane.io/v1alpha1"

	// ttlMillis is function-sdk-go's response.DefaultTTL, one minute.
	ttlMillis uint64 = 60_000
)

var readiness = map[string]component.Ready{
	"True":        component.ReadyTrue,
	"False":       component.ReadyFalse,
	"Unspecified": component.ReadyUnspecified,
}

// composed is a desired composed resource.
type composed struct {
	obj   map[string]any
	ready component.Ready
}

// call is the state of one call.
type call struct {
	req *component.Request

	// ctx is the pipeline context. Upstream's response starts as the
	// request's context and changes it in place, so what a Context
	// document merges into is the context as earlier documents left it.
	ctx map[string]any

	conditions []component.Condition

	// xrDetails are the desired composite's connection details. When the
	// request's desired composite had some, upstream adds to the request's
	// own map, so a fatal response shows the additions too.
	xrDetails     map[string][]byte
	detailsShared bool

	// requirements by name; clusterScoped are the names upstream also
	// lists as (legacy) extra resources, which a later duplicate collides
	// with.
	requirements  map[string]component.ResourceSelector
	clusterScoped map[string]bool
}

func runFunction(req *component.Request) (*component.Response, *component.Error) {
	component.Log(component.LogDebug, "Running Function tag="+req.Meta.Tag)
	ctx, err := parseStruct(req.Context)
	if err != nil {
		return nil, &component.Error{Kind: component.ErrorInvalidInput, Message: "context: " + err.Error()}
	}
	c := &call{req: req, ctx: ctx}
	rsp, err := c.run()
	if err != nil {
		var bad hostError
		if errors.As(err, &bad) {
			return nil, &component.Error{Kind: component.ErrorInvalidInput, Message: bad.Error()}
		}
		return c.fatal(err.Error())
	}
	return rsp, nil
}

// hostError is a request the host should not have sent (JSON that is not
// an object, say); upstream could not have received it.
type hostError struct{ err error }

func (e hostError) Error() string { return e.err.Error() }

func (c *call) run() (*component.Response, error) {
	in, err := readInput(c.req.Input)
	if err != nil {
		return nil, err
	}
	text, err := templateText(in, c.ctx)
	if err != nil {
		return nil, fmt.Errorf("invalid function input: %w", err)
	}
	tmpl, err := newTemplate(in.Delims).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("invalid function input: cannot parse the provided templates: %w", err)
	}
	if in.Options != nil {
		if err := applyOptions(tmpl, *in.Options); err != nil {
			return nil, fmt.Errorf("cannot apply template options: %w", err)
		}
	}
	data, err := requestData(c.req)
	if err != nil {
		return nil, hostError{err}
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, data); err != nil {
		return nil, fmt.Errorf("cannot execute template: %w", err)
	}
	rendered := out.String()
	component.Log(component.LogDebug, "rendered manifests: "+rendered)
	objs, err := decodeManifests(rendered)
	if err != nil {
		return nil, err
	}
	return c.compose(objs)
}

// compose applies the rendered objects to the desired state.
func (c *call) compose(objs []map[string]any) (*component.Response, error) {
	xr := map[string]any{}
	c.xrDetails = map[string][]byte{}
	if d := c.req.Desired.Composite; d != nil {
		var err error
		if xr, err = parseStruct(d.JSON); err != nil {
			return nil, hostError{fmt.Errorf("desired composite: %w", err)}
		}
		for _, cd := range d.ConnectionDetails {
			c.xrDetails[cd.Key] = cd.Value
		}
		c.detailsShared = len(d.ConnectionDetails) > 0
	}
	// Upstream does not carry the desired composite's readiness over.
	xrReady := component.ReadyUnspecified
	var xrAPIVersion, xrKind string
	if o := c.req.Observed.Composite; o != nil {
		observed, err := parseObject(o.JSON)
		if err != nil {
			return nil, hostError{fmt.Errorf("observed composite: %w", err)}
		}
		xrAPIVersion, xrKind = stringField(observed, "apiVersion"), stringField(observed, "kind")
	}
	resources := make(map[string]composed, len(c.req.Desired.Resources))
	for _, r := range c.req.Desired.Resources {
		obj, err := parseStruct(r.Resource.JSON)
		if err != nil {
			return nil, hostError{fmt.Errorf("desired resource %q: %w", r.Name, err)}
		}
		resources[r.Name] = composed{obj: obj, ready: r.Resource.Ready}
	}
	c.requirements = map[string]component.ResourceSelector{}
	c.clusterScoped = map[string]bool{}

	for _, obj := range objs {
		apiVersion, kind := stringField(obj, "apiVersion"), stringField(obj, "kind")
		annotations, _, _ := annotationsOf(obj)

		ready, hasReady := component.ReadyUnspecified, false
		if apiVersion != metaAPIVersion {
			if v, found := annotations[annotationReady]; found {
				r, valid := readiness[v]
				if !valid {
					return nil, fmt.Errorf("invalid function input: invalid %q annotation value %q: must be True, False, or Unspecified", annotationReady, v)
				}
				ready, hasReady = r, true
				removeAnnotation(obj, annotationReady)
			}
		}

		name, named := annotations[annotationResourceName]
		if apiVersion == xrAPIVersion && kind == xrKind && !named {
			// The composite itself: only its status and readiness count.
			if err := mergeStatus(xr, obj); err != nil {
				return nil, err
			}
			if hasReady {
				xrReady = ready
			}
			continue
		}

		if apiVersion == metaAPIVersion {
			if err := c.meta(kind, obj); err != nil {
				return nil, err
			}
			continue
		}

		removeAnnotation(obj, annotationResourceName)
		if !named {
			return nil, fmt.Errorf("%q template is missing required %q annotation", kind, annotationResourceName)
		}
		resources[name] = composed{obj: obj, ready: ready}
	}

	return c.respond(xr, xrReady, resources)
}

// meta handles a document of the meta.gotemplating.fn.crossplane.io group.
func (c *call) meta(kind string, obj map[string]any) error {
	switch kind {
	case "CompositeConnectionDetails":
		for k, v := range stringObject(obj, "data") {
			// Upstream keeps what decodes of a bad value.
			d, _ := base64.StdEncoding.DecodeString(v)
			c.xrDetails[k] = d
		}
	case "ClaimConditions":
		var entries []TargetedCondition
		if err := getValueInto(obj, "conditions", &entries); err != nil {
			return fmt.Errorf("cannot get Conditions from input: %w", err)
		}
		conds, err := claimConditions(entries)
		c.conditions = append(c.conditions, conds...)
		if err != nil {
			return err
		}
	case "Context":
		data := map[string]any{}
		if err := getValueInto(obj, "data", &data); err != nil {
			return fmt.Errorf("cannot get Contexts from input: %w", err)
		}
		// Upstream merges into a copy of the context as a Struct holds it
		// (every number a double), then sets each of its keys.
		merged, _ := toDoubles(c.ctx).(map[string]any)
		if len(data) > 0 {
			if err := mergo.Merge(&merged, data, mergo.WithOverride); err != nil {
				return fmt.Errorf("cannot merge Context: cannot merge data *v1.RunFunctionRequest: %w", err)
			}
		}
		for k, v := range merged {
			c.ctx[k] = v
		}
	case "ExtraResources":
		reqs := ExtraResourcesRequirements{}
		if err := getValueInto(obj, "requirements", &reqs); err != nil {
			return fmt.Errorf("cannot get extra resources requirements: %w", err)
		}
		for _, name := range sortedKeys(reqs) {
			if c.clusterScoped[name] {
				return fmt.Errorf("duplicate extra resource key %q", name)
			}
			c.requirements[name] = reqs[name].selector()
			if reqs[name].Namespace == "" {
				c.clusterScoped[name] = true
			}
		}
	default:
		return fmt.Errorf("invalid kind %q for apiVersion %q - must be one of CompositeConnectionDetails, Context or ExtraResources", kind, metaAPIVersion)
	}
	return nil
}

// mergeStatus merges the rendered composite's status over the desired
// composite's: objects key by key, anything else replaced.
func mergeStatus(xr, rendered map[string]any) error {
	dst, dstFound := map[string]any{}, true
	if err := getValueInto(xr, "status", &dst); err != nil {
		if !isNotFound(err) {
			return fmt.Errorf("cannot get desired composite status: %w", err)
		}
		dstFound = false
	}
	src, srcFound := map[string]any{}, true
	if err := getValueInto(rendered, "status", &src); err != nil {
		if !isNotFound(err) {
			return fmt.Errorf("cannot get templated composite status: %w", err)
		}
		srcFound = false
	}
	if !dstFound && !srcFound {
		return nil
	}
	if err := mergo.Merge(&dst, src, mergo.WithOverride); err != nil {
		return fmt.Errorf("cannot merge desired composite status: %w", err)
	}
	if err := setTopLevel(xr, "status", dst); err != nil {
		return fmt.Errorf("cannot set desired composite status: %w", err)
	}
	return nil
}

func isNotFound(err error) bool {
	var nf notFound
	return errors.As(err, &nf)
}

// stringObject is the object at field if all its values are strings, else
// nil.
func stringObject(obj map[string]any, field string) map[string]string {
	m, ok := obj[field].(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		out[k] = s
	}
	return out
}

// removeAnnotation deletes an annotation, leaving an empty annotations
// object behind.
func removeAnnotation(obj map[string]any, key string) {
	if meta, ok := obj["metadata"].(map[string]any); ok {
		if annotations, ok := meta["annotations"].(map[string]any); ok {
			delete(annotations, key)
		}
	}
}

// respond builds the successful response.
func (c *call) respond(xr map[string]any, xrReady component.Ready, resources map[string]composed) (*component.Response, error) {
	rsp := c.base()
	xrJSON, err := encodeJSON(xr)
	if err != nil {
		return nil, fmt.Errorf("cannot set desired composite resource: %w", err)
	}
	rsp.Desired.Composite = &component.Resource{JSON: xrJSON, ConnectionDetails: details(c.xrDetails), Ready: xrReady}
	for _, name := range sortedKeys(resources) {
		text, err := encodeJSON(resources[name].obj)
		if err != nil {
			return nil, fmt.Errorf("cannot desired composed resources: %w", err)
		}
		rsp.Desired.Resources = append(rsp.Desired.Resources, component.ComposedResource{
			Name:     name,
			Resource: component.Resource{JSON: text, Ready: resources[name].ready},
		})
	}
	for _, name := range sortedKeys(c.requirements) {
		rsp.Requirements.Resources = append(rsp.Requirements.Resources, component.ResourceRequirement{Name: name, Selector: c.requirements[name]})
	}
	if len(c.req.RequiredResources) > 0 {
		c.mergeRequiredResources()
	}
	if rsp.Context, err = encodeJSON(c.ctx); err != nil {
		return nil, hostError{fmt.Errorf("context: %w", err)}
	}
	component.Log(component.LogDebug, fmt.Sprintf("Successfully composed desired resources count=%d", len(resources)))
	return rsp, nil
}

// mergeRequiredResources puts the required resources into the context
// under extraResourcesContextKey, over what is there, so later steps can
// read them with getExtraResourcesFromContext.
func (c *call) mergeRequiredResources() {
	required := make(map[string]any, len(c.req.RequiredResources))
	for _, rr := range c.req.RequiredResources {
		entry := map[string]any{}
		if len(rr.Items) > 0 {
			items := make([]any, 0, len(rr.Items))
			for _, item := range rr.Items {
				obj, err := parseStruct(item)
				if err != nil {
					obj = map[string]any{}
				}
				items = append(items, map[string]any{"resource": obj})
			}
			entry["items"] = items
		}
		required[rr.Name] = entry
	}
	if existing, ok := c.ctx[extraResourcesContextKey].(map[string]any); ok {
		merged := make(map[string]any, len(existing)+len(required))
		for k, v := range existing {
			merged[k] = v
		}
		for k, v := range required {
			merged[k] = v
		}
		required = merged
	}
	c.ctx[extraResourcesContextKey] = required
}

func details(m map[string][]byte) []component.ConnectionDetail {
	out := make([]component.ConnectionDetail, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, component.ConnectionDetail{Key: k, Value: m[k]})
	}
	return out
}

// base is a response with what every response carries.
func (c *call) base() *component.Response {
	ttl := ttlMillis
	rsp := &component.Response{Tag: c.req.Meta.Tag, TTLMillis: &ttl, Conditions: c.conditions}
	return rsp
}

// fatal is the response for a failure: the request's desired state passed
// through, and one fatal result.
func (c *call) fatal(msg string) (*component.Response, *component.Error) {
	rsp := c.base()
	text, err := encodeJSON(c.ctx)
	if err != nil {
		return nil, &component.Error{Kind: component.ErrorInvalidInput, Message: "context: " + err.Error()}
	}
	rsp.Context = text
	rsp.Desired = passThrough(&c.req.Desired)
	if c.detailsShared {
		rsp.Desired.Composite.ConnectionDetails = details(c.xrDetails)
	}
	target := component.TargetComposite
	rsp.Results = append(rsp.Results, component.Result{Severity: component.SeverityFatal, Message: msg, Target: &target})
	return rsp, nil
}

// passThrough is the request's desired state as upstream returns it: the
// same resources (by name, connection details by key), their objects
// printed again from Structs.
func passThrough(s *component.State) component.State {
	var out component.State
	if s.Composite != nil {
		xr := reprint(*s.Composite)
		out.Composite = &xr
	}
	byName := make(map[string]component.Resource, len(s.Resources))
	for _, r := range s.Resources {
		byName[r.Name] = r.Resource
	}
	for _, name := range sortedKeys(byName) {
		out.Resources = append(out.Resources, component.ComposedResource{Name: name, Resource: reprint(byName[name])})
	}
	return out
}

func reprint(r component.Resource) component.Resource {
	if obj, err := parseStruct(r.JSON); err == nil {
		if text, err := encodeJSON(obj); err == nil {
			r.JSON = text
		}
	}
	if len(r.ConnectionDetails) > 0 {
		m := make(map[string][]byte, len(r.ConnectionDetails))
		for _, d := range r.ConnectionDetails {
			m[d.Key] = d.Value
		}
		r.ConnectionDetails = details(m)
	}
	return r
}
